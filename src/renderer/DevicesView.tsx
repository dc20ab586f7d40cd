import { useCallback, useEffect, useId, useRef, useState, type FormEvent, type JSX } from 'react'
import type { DeviceDto } from '../shared/api'
import { errorText, useApi } from './api-context'
import { formatWhen } from './conversation-list'

function stateOf (d: DeviceDto): string {
  if (d.self) return 'this device'
  if (d.connected) return d.suspected ? 'suspected' : 'online'
  return 'offline'
}

/** This device and the paired ones; inviting and joining; the network switch. */
export function DevicesView ({ onClose }: { onClose: () => void }): JSX.Element {
  const client = useApi()
  const [devices, setDevices] = useState<DeviceDto[] | undefined>()
  const [listError, setListError] = useState<string | undefined>()
  const [invite, setInvite] = useState<{ code: string; expiresAt: number } | undefined>()
  const [inviteError, setInviteError] = useState<string | undefined>()
  const [inviting, setInviting] = useState(false)
  const [copied, setCopied] = useState(false)
  const [code, setCode] = useState('')
  const [joining, setJoining] = useState(false)
  const [joinError, setJoinError] = useState<string | undefined>()
  const [joined, setJoined] = useState<string | undefined>()
  const [online, setOnline] = useState(true)
  const [netError, setNetError] = useState<string | undefined>()
  const [now, setNow] = useState(() => Date.now())
  const codeId = useId()
  const headingRef = useRef<HTMLHeadingElement>(null)

  const refresh = useCallback(() => {
    client.call('devices.list', {}).then(
      l => { setDevices(l); setListError(undefined) },
      err => setListError(errorText(err))
    )
  }, [client])

  useEffect(() => {
    headingRef.current?.focus()
    refresh()
    const t = setInterval(() => { setNow(Date.now()); refresh() }, 10_000)
    return () => clearInterval(t)
  }, [refresh])

  useEffect(() => client.onEvent(ev => { if (ev.type === 'peer') refresh() }), [client, refresh])

  const makeInvite = (): void => {
    setInviting(true)
    setInviteError(undefined)
    setCopied(false)
    client.call('devices.invite', {}).then(
      r => { setInvite(r); setInviting(false); setNow(Date.now()) },
      err => { setInviteError(errorText(err)); setInviting(false) }
    )
  }

  const copy = (): void => {
    if (invite === undefined) return
    navigator.clipboard.writeText(invite.code).then(() => setCopied(true), () => setInviteError('could not copy; select the code and copy it by hand'))
  }

  const join = (e: FormEvent): void => {
    e.preventDefault()
    if (joining) return
    setJoining(true)
    setJoinError(undefined)
    setJoined(undefined)
    client.call('devices.join', { code: code.trim() }).then(
      r => { setJoining(false); setJoined(r.inviter); setCode(''); refresh() },
      err => { setJoining(false); setJoinError(errorText(err)) }
    )
  }

  const toggleNet = (on: boolean): void => {
    setNetError(undefined)
    setOnline(on)
    client.call('net.set', { on }).then(refresh, err => { setOnline(!on); setNetError(errorText(err)) })
  }

  const expiresIn = invite !== undefined ? Math.max(0, Math.round((invite.expiresAt - now) / 60_000)) : 0

  return (
    <section className="placeholder screen" aria-labelledby="devices-heading"
      onKeyDown={e => { if (e.key === 'Escape') { e.preventDefault(); onClose() } }}>
      <div className="screen-head">
        <h2 id="devices-heading" ref={headingRef} tabIndex={-1}>Devices</h2>
        <label className="check-label">
          <input type="checkbox" checked={online} onChange={e => toggleNet(e.target.checked)} />
          Network on
        </label>
        <button type="button" onClick={onClose}>Back to chat</button>
      </div>
      {netError !== undefined ? <p className="form-error" role="alert">{netError}</p> : null}
      {listError !== undefined ? <p className="form-error" role="alert">Could not list devices: {listError} <button type="button" onClick={refresh}>Retry</button></p> : null}
      {devices === undefined
        ? <p>Loading…</p>
        : (
          <table aria-label="Devices" className="devices-table">
            <thead>
              <tr><th scope="col" align="left">Name</th><th scope="col" align="left">State</th><th scope="col" align="left">Last seen</th><th scope="col" align="left">Sync</th></tr>
            </thead>
            <tbody>
              {devices.map(d => (
                <tr key={d.device}>
                  <td title={d.device}>{d.name || d.device.slice(0, 12)}</td>
                  <td>{stateOf(d)}</td>
                  <td>{d.self || d.connected ? 'now' : d.lastSeen !== undefined ? <time dateTime={new Date(d.lastSeen).toISOString()}>{formatWhen(d.lastSeen, now)}</time> : 'never'}</td>
                  <td>{d.self ? '—' : d.behind === 0 ? 'up to date' : `${d.behind} entries behind`}</td>
                </tr>
              ))}
            </tbody>
          </table>
          )}
      <div className="new-form screen-form" aria-label="Invite a device" role="group">
        <button type="button" className="primary" onClick={makeInvite} disabled={inviting}>{inviting ? 'Inviting…' : 'Invite a device'}</button>
        {inviteError !== undefined ? <p className="form-error" role="alert">{inviteError}</p> : null}
        {invite !== undefined
          ? (
            <div>
              <p className="invite-hint">On the other device choose Join and enter this code (it works once, for {expiresIn} more minute{expiresIn === 1 ? '' : 's'}):</p>
              <output aria-label="Invite code" className="mono invite-code">{invite.code}</output>
              <button type="button" onClick={copy}>{copied ? 'Copied' : 'Copy the code'}</button>
            </div>
            )
          : null}
      </div>
      <form className="new-form screen-form" aria-label="Join" onSubmit={join}>
        <label htmlFor={codeId}>Invite code from another device</label>
        <input id={codeId} className="mono" value={code} onChange={e => { setCode(e.target.value); setJoinError(undefined) }} spellCheck={false} autoCapitalize="off" autoCorrect="off" />
        {joinError !== undefined ? <p className="form-error" role="alert">{joinError}</p> : null}
        {joined !== undefined ? <p role="status">Joined; paired with {joined.slice(0, 12)}.</p> : null}
        <div className="form-actions">
          <button type="submit" disabled={joining || code.trim() === ''}>{joining ? 'Joining…' : 'Join'}</button>
        </div>
      </form>
    </section>
  )
}

import { useCallback, useEffect, useId, useRef, useState, type FormEvent, type JSX } from 'react'
import type { DeviceDto, NetStateDto } from '../../shared/api/api'
import { errorText, useApi } from '../api-context'
import { formatWhen } from '../common/format'
import { netLine } from './net-state'

function stateOf (d: DeviceDto): string {
  if (d.self) return 'this device'
  if (d.version?.compat === 'too-old' || d.version?.compat === 'too-new') return 'not syncing'
  if (d.connected) return d.suspected ? 'suspected' : 'online'
  return 'offline'
}

/** This device and the paired ones, with the agents each runs; inviting and joining; the network switch. */
export function DevicesView ({ net, onClose }: { net: NetStateDto | undefined; onClose: () => void }): JSX.Element {
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
  /** the state asked for while net.set is under way (then the node's state shows again) */
  const [asked, setAsked] = useState<boolean | undefined>()
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

  // Devices come and go, and so do the agents they announce.
  useEffect(() => client.onEvent(ev => { if (ev.type === 'peer' || ev.type === 'agent') refresh() }), [client, refresh])

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
    setAsked(on)
    client.call('net.set', { on }).then(
      () => { setAsked(undefined); refresh() },
      err => { setAsked(undefined); setNetError(`Could not turn the network ${on ? 'on' : 'off'}: ${errorText(err)}`) }
    )
  }
  const online = asked ?? net?.online

  const expiresIn = invite !== undefined ? Math.max(0, Math.round((invite.expiresAt - now) / 60_000)) : 0

  return (
    <section className="placeholder screen" aria-labelledby="devices-heading"
      onKeyDown={e => { if (e.key === 'Escape') { e.preventDefault(); onClose() } }}>
      <div className="screen-head">
        <h2 id="devices-heading" ref={headingRef} tabIndex={-1}>Devices</h2>
        <label className="check-label">
          <input type="checkbox" checked={online ?? false} disabled={online === undefined || asked !== undefined} onChange={e => toggleNet(e.target.checked)} />
          Network on
        </label>
        <button type="button" onClick={onClose}>Back to chat</button>
      </div>
      {netError !== undefined ? <p className="form-error" role="alert">{netError}</p> : null}
      {net !== undefined
        ? (
          <p className={net.online ? 'net-line' : 'net-line offline'} role="status">{netLine(net)}</p>
          )
        : null}
      {listError !== undefined ? <p className="form-error" role="alert">Could not list devices: {listError} <button type="button" onClick={refresh}>Retry</button></p> : null}
      {devices === undefined
        ? <p>Loading…</p>
        : (
          <table aria-label="Devices" className="devices-table">
            <thead>
              <tr><th scope="col" align="left">Name</th><th scope="col" align="left">State</th><th scope="col" align="left">Last seen</th><th scope="col" align="left">Sync</th><th scope="col" align="left">Agents</th></tr>
            </thead>
            <tbody>
              {devices.map(d => (
                <tr key={d.device}>
                  <td title={d.device}>{d.name || d.device.slice(0, 12)}</td>
                  <td>{stateOf(d)}{d.version?.advice !== undefined ? <div className="field-note">{d.version.advice}</div> : null}</td>
                  <td>{d.self || d.connected ? 'now' : d.lastSeen !== undefined ? <time dateTime={new Date(d.lastSeen).toISOString()}>{formatWhen(d.lastSeen, now)}</time> : 'never'}</td>
                  <td>{d.self ? '—' : d.behind === 0 ? 'up to date' : `${d.behind} entries behind`}</td>
                  <td><AgentList device={d} /></td>
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

/** The conversations whose agents the device runs (another device's: as it announces them). */
function AgentList ({ device: d }: { device: DeviceDto }): JSX.Element {
  const agents = d.agents ?? []
  if (agents.length === 0) return <span className="device-agents none">{d.self || d.connected ? 'none' : '—'}</span>
  return (
    <ul className="device-agents" aria-label={`Agents running on ${d.name || d.device.slice(0, 12)}`}>
      {agents.map(a => <li key={a.conversation} title={a.conversation}>{a.title || `Untitled (${a.conversation.slice(0, 8)})`}</li>)}
    </ul>
  )
}

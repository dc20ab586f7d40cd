// A tool call as a card: name, a line about the arguments, status; opened, the arguments and
// the output (recorded, or live while the call runs).
import { createContext, useContext, useEffect, useId, useRef, useState, type JSX } from 'react'
import type { ToolCallView, ToolStatus } from './transcript-items'

/** Tool cards opened or closed by hand, by call id: a card scrolled out of the window and back keeps its state. */
export const ToolCardsOpen = createContext<Map<string, boolean> | undefined>(undefined)

const STATUS_LABEL: Record<ToolStatus, string> = {
  pending: 'starting',
  running: 'running',
  ok: 'done',
  error: 'failed',
  unknown: 'outcome unknown',
  cancelled: 'cancelled',
  interrupted: 'no result'
}

/** One line about the arguments: the command, path or URL if there is one, else compact JSON. */
export function argsSummary (args: unknown): string {
  if (args !== null && typeof args === 'object' && !Array.isArray(args)) {
    const a = args as Record<string, unknown>
    for (const k of ['command', 'cmd', 'path', 'url', 'query']) {
      const v = a[k]
      if (typeof v === 'string') return oneLine(v)
    }
  }
  if (args === undefined) return ''
  return oneLine(typeof args === 'string' ? args : JSON.stringify(args) ?? '')
}

function oneLine (s: string): string {
  const flat = s.replace(/\s+/g, ' ').trim()
  return flat.length > 120 ? flat.slice(0, 119) + '…' : flat
}

function prettyArgs (args: unknown): string {
  if (typeof args === 'string') return args
  try { return JSON.stringify(args, null, 2) ?? String(args) } catch { return String(args) }
}

export function ToolCard ({ tool, live }: { tool: ToolCallView; live: string | undefined }): JSX.Element {
  const active = tool.status === 'running' || tool.status === 'pending'
  const remembered = useContext(ToolCardsOpen)
  const [open, setOpenState] = useState<boolean | undefined>(() => remembered?.get(tool.callId))
  const setOpen = (v: boolean): void => { remembered?.set(tool.callId, v); setOpenState(v) }
  const expanded = open ?? (active || tool.status === 'error')
  const bodyId = useId()
  const output = tool.output ?? live
  const summary = argsSummary(tool.args)
  return (
    <div className={`tool-card status-${tool.status}`}>
      <button
        type="button"
        className="tool-head"
        aria-expanded={expanded}
        aria-controls={bodyId}
        onClick={() => setOpen(!expanded)}
      >
        <span className="chevron" aria-hidden="true">{expanded ? '▾' : '▸'}</span>
        <span className="tool-name">{tool.name}</span>
        <span className="tool-args">{summary}</span>
        <span className={`tool-status ${tool.status}`}>
          {active ? <span className="spinner small" aria-hidden="true" /> : null}
          {STATUS_LABEL[tool.status]}
        </span>
      </button>
      {expanded
        ? (
          <div className="tool-body" id={bodyId}>
            <div className="tool-section-label">Arguments{tool.effect !== undefined ? <span className="effect"> · effect: {tool.effect}</span> : null}</div>
            <pre className="tool-pre" tabIndex={0} aria-label="Arguments">{prettyArgs(tool.args)}</pre>
            <div className="tool-section-label">Output{tool.truncated === true ? <span className="effect"> · truncated</span> : null}{tool.output === undefined && live !== undefined ? <span className="effect"> · live</span> : null}</div>
            {output !== undefined && output !== ''
              ? <LiveOutput text={output} follow={tool.output === undefined} />
              : <div className="tool-empty">{active ? 'waiting for output…' : '(no output)'}</div>}
          </div>
          )
        : null}
    </div>
  )
}

function LiveOutput ({ text, follow }: { text: string; follow: boolean }): JSX.Element {
  const ref = useRef<HTMLPreElement>(null)
  useEffect(() => {
    const el = ref.current
    if (follow && el !== null) el.scrollTop = el.scrollHeight
  }, [text, follow])
  return <pre ref={ref} className="tool-pre output" tabIndex={0} aria-label="Output">{text}</pre>
}

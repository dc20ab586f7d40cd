// A compaction in the transcript: the line saying the model goes on from a summary, and, folded
// until asked, "the earlier conversation summarised": the summary and the messages it stands for.
import { useState, type JSX, type ReactNode } from 'react'
import type { FoldedRange, TranscriptItem } from './transcript-items'

export function CompactionBlock ({ item, folded, forks }: { item: TranscriptItem & { kind: 'notice' }; folded: FoldedRange; forks: ReactNode }): JSX.Element {
  const [open, setOpen] = useState(false)
  const body = `compaction-${item.id}`
  return (
    <div className="notice info compaction" role="note">
      <span className="notice-icon" aria-hidden="true">i</span>
      <div>
        <div className="notice-text">{item.text}</div>
        <button type="button" className="compaction-toggle" aria-expanded={open} aria-controls={body} onClick={() => setOpen(o => !o)}>
          {open ? '▾' : '▸'} Earlier conversation summarised ({folded.entries} entr{folded.entries === 1 ? 'y' : 'ies'})
        </button>
        {open
          ? (
            <div id={body} className="compaction-body">
              {item.detail !== undefined ? <div className="notice-detail">{item.detail}</div> : null}
              {folded.lines.length > 0
                ? (
                  <ol className="compaction-folded" aria-label="Messages the summary stands for">
                    {folded.lines.map(l => <li key={l.id}><span className="compaction-who">{l.who === 'user' ? 'You' : 'Agent'}:</span> {l.text}</li>)}
                    {folded.more > 0 ? <li>… and {folded.more} more</li> : null}
                  </ol>
                  )
                : null}
            </div>
            )
          : null}
      </div>
      {forks !== null ? <div className="msg-actions">{forks}</div> : null}
    </div>
  )
}

// The "‹ 2/3 ›" switchers where the shown branch forks (keyboard: arrow keys).
import { useEffect, useRef, type JSX, type KeyboardEvent } from 'react'
import type { Fork } from './branch-nav'
import type { TranscriptActions } from './transcript-actions'

/** An item's switchers, one per fork at its entries (none: nothing drawn). */
export function Forks ({ forks, onSwitch, focusAt }: { forks: readonly Fork[] } & Pick<TranscriptActions, 'onSwitch' | 'focusAt'>): JSX.Element | null {
  if (forks.length === 0) return null
  return <>{forks.map(f => <BranchSwitcher key={f.at} fork={f} onSwitch={onSwitch} focusAt={focusAt} />)}</>
}

/** "‹ 2/3 ›" where the branch forks. */
export function BranchSwitcher ({ fork, onSwitch, focusAt }: { fork: Fork } & Pick<TranscriptActions, 'onSwitch' | 'focusAt'>): JSX.Element {
  const prevRef = useRef<HTMLButtonElement>(null)
  const nextRef = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    if (focusAt?.id !== fork.at) return
    const want = focusAt.dir < 0 ? (fork.prev !== undefined ? prevRef : nextRef) : (fork.next !== undefined ? nextRef : prevRef)
    want.current?.focus()
  }, [focusAt, fork])
  const onKey = (e: KeyboardEvent<HTMLDivElement>): void => {
    if (e.key === 'ArrowLeft' && fork.prev !== undefined) { e.preventDefault(); onSwitch(fork.prev, -1) }
    if (e.key === 'ArrowRight' && fork.next !== undefined) { e.preventDefault(); onSwitch(fork.next, 1) }
  }
  return (
    <div className="branch-switch" role="group" aria-label={`Branch ${fork.index + 1} of ${fork.count}`} title={fork.names?.at !== undefined ? `This branch: ${fork.names.at}` : undefined} onKeyDown={onKey}>
      <button
        ref={prevRef}
        type="button"
        aria-label="Previous branch"
        title={fork.names?.prev !== undefined ? `Previous branch: ${fork.names.prev}` : undefined}
        disabled={fork.prev === undefined}
        onClick={() => fork.prev !== undefined && onSwitch(fork.prev, -1)}
      >‹
      </button>
      <span aria-hidden="true">{fork.index + 1}/{fork.count}</span>
      <button
        ref={nextRef}
        type="button"
        aria-label="Next branch"
        title={fork.names?.next !== undefined ? `Next branch: ${fork.names.next}` : undefined}
        disabled={fork.next === undefined}
        onClick={() => fork.next !== undefined && onSwitch(fork.next, 1)}
      >›
      </button>
    </div>
  )
}

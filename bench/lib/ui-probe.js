// Measures the UI from inside the page (bench/ui.ts installs it with addInitScript, before the
// app's scripts). Plain browser JavaScript: page.evaluate is given strings, not transpiled code.
// "Painted" = a task posted from the requestAnimationFrame callback whose DOM shows the content
// has run, i.e. that frame's style, layout and paint are done.
/* global window, document, sessionStorage, requestAnimationFrame, MessageChannel */
(() => {
  const afterPaint = () => new Promise(resolve => requestAnimationFrame(() => {
    const ch = new MessageChannel()
    ch.port1.onmessage = () => resolve(performance.now())
    ch.port2.postMessage(null)
  }))

  /** Letters and digits only: Markdown's markup is gone from the rendered text, the words are not. */
  const alnum = s => s.replace(/[^0-9A-Za-z]+/g, '')

  /** Polls each frame until `ready()` holds; resolves with the time that frame was painted. */
  const paintedWhen = (ready, timeoutMs = 30_000) => new Promise((resolve, reject) => {
    const deadline = performance.now() + timeoutMs
    const frame = () => {
      if (ready()) {
        const ch = new MessageChannel()
        ch.port1.onmessage = () => resolve(performance.now())
        ch.port2.postMessage(null)
      } else if (performance.now() > deadline) reject(new Error('timed out waiting for the page'))
      else requestAnimationFrame(frame)
    }
    requestAnimationFrame(frame)
  })

  // ------------------------------------------------------------ streamed tokens
  // A listener added in the constructor runs before the app's onmessage (registered later).
  const tokens = []
  let streamed = ''
  let watching = false
  const NativeWebSocket = window.WebSocket
  class ProbedWebSocket extends NativeWebSocket {
    constructor (...args) {
      super(...args)
      this.addEventListener('message', ev => {
        // cheap test first: conversation payloads are megabytes and must not be parsed twice
        if (typeof ev.data !== 'string' || ev.data.length > 4096 || !ev.data.includes('"token"')) return
        const at = performance.now()
        const msg = JSON.parse(ev.data)
        if (msg.event?.type !== 'token') return
        streamed += msg.event.delta
        tokens.push({ at, want: alnum(streamed), frameAt: undefined, shownAt: undefined })
        watch()
      })
    }
  }
  window.WebSocket = ProbedWebSocket

  const watch = () => {
    if (watching) return
    watching = true
    requestAnimationFrame(frame)
  }
  const frame = () => {
    const el = document.querySelector('[aria-label="Agent is writing"]')
    const pending = tokens.filter(t => t.frameAt === undefined)
    if (el === null && pending.length > 0 && performance.now() - pending[0].at > 1000) {
      // the reply was recorded before these were drawn: they were never shown while streaming
      for (const t of pending) t.frameAt = t.shownAt = Number.NaN
    }
    const shown = el === null ? '' : alnum(el.textContent ?? '')
    const now = pending.filter(t => shown.startsWith(t.want))
    if (now.length > 0) {
      const ch = new MessageChannel()
      ch.port1.onmessage = () => { const t = performance.now(); for (const k of now) k.shownAt = t }
      ch.port2.postMessage(null)
      const t = performance.now()
      for (const k of now) k.frameAt = t
    }
    if (tokens.some(t => t.frameAt === undefined)) requestAnimationFrame(frame)
    else watching = false
  }

  // ------------------------------------------------------------ raw API calls (baselines)
  let raw
  const rawSocket = () => raw ?? (raw = new Promise((resolve, reject) => {
    const url = new URL('/api', window.location.href)
    url.protocol = 'ws:'
    url.searchParams.set('token', sessionStorage.getItem('arbor.token') ?? '')
    const ws = new NativeWebSocket(url.toString())
    ws.onopen = () => resolve(ws)
    ws.onerror = () => reject(new Error('the baseline socket did not open'))
  }))
  let rawId = 1_000_000

  window.__arborProbe = {
    /** Clicks the first element matching `selector` whose text includes `text`; ms until a frame painted with `until` matching (and holding `untilText`). */
    async clickUntil (selector, text, until, untilText) {
      const target = [...document.querySelectorAll(selector)].find(e => text === '' || (e.textContent ?? '').includes(text))
      if (target === undefined) throw new Error(`nothing matches ${selector} with “${text}”`)
      const t0 = performance.now()
      target.click()
      const t1 = await paintedWhen(() => {
        const el = document.querySelector(until)
        return el !== null && (untilText === '' || (el.textContent ?? '').includes(untilText))
      })
      return t1 - t0
    },
    /** ms from sending `conversation.open` (with `tail`, if given) on a bare WebSocket to its response parsed: no rendering. */
    async rawOpen (id, tail) {
      const ws = await rawSocket()
      const my = rawId++
      return await new Promise((resolve, reject) => {
        const t0 = performance.now()
        ws.onmessage = ev => {
          const msg = JSON.parse(ev.data)
          if (msg.id !== my) return
          if (msg.error !== undefined) { reject(new Error(msg.error.message)); return }
          if (!Array.isArray(msg.result?.entries)) { reject(new Error('no entries in the response')); return }
          resolve(performance.now() - t0)
        }
        ws.send(JSON.stringify({ id: my, method: 'conversation.open', params: tail === undefined ? { id } : { id, tail } }))
      })
    },
    /** `n` bare frame round trips from a timer task at a random phase to after the next paint. */
    async frameRoundTrips (n) {
      const out = []
      for (let i = 0; i < n; i++) {
        await new Promise(resolve => setTimeout(resolve, Math.random() * 20))
        const t0 = performance.now()
        out.push(await afterPaint() - t0)
      }
      return out
    },
    startTokens () { tokens.length = 0; streamed = '' },
    /** per token: ms from its message to after the paint that shows it (NaN: never shown while streaming) */
    tokenLatencies () { return tokens.map(t => t.shownAt - t.at) },
    afterPaint
  }
})()

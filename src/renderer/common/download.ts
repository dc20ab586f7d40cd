// A file handed to the person: a Blob downloaded through a link, the same in a browser
// (`arbor serve`) and in Electron's renderer (its session saves it), so no Electron API is needed.
export function downloadText (name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = name
  a.rel = 'noopener'
  document.body.append(a)
  a.click()
  a.remove()
  // the download has taken the bytes once the click is handled
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

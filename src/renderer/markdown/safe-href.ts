/** A link target the reader may follow: web and mail links only (no script, data or file URLs). */
export function safeHref (href: string): string | undefined {
  const h = href.trim()
  return /^(https?:\/\/|mailto:)[^\s<>"]+$/i.test(h) ? h : undefined
}

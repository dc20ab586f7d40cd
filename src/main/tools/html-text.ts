/**
 * HTML reduced to readable text, without a parser: scripts, styles and comments dropped,
 * block elements turned into line breaks, tags stripped, entities decoded, whitespace
 * collapsed. Good enough for a model to read a page; not a renderer. Pure.
 */

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', shy: '', copy: '©', reg: '®', trade: '™',
  hellip: '…', mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', sbquo: '‚', ldquo: '“', rdquo: '”', bdquo: '„',
  laquo: '«', raquo: '»', lsaquo: '‹', rsaquo: '›', bull: '•', middot: '·', euro: '€', pound: '£', yen: '¥', cent: '¢',
  deg: '°', plusmn: '±', times: '×', divide: '÷', para: '¶', sect: '§', micro: 'µ', frac12: '½', frac14: '¼', frac34: '¾',
  larr: '←', rarr: '→', uarr: '↑', darr: '↓', harr: '↔', ne: '≠', le: '≤', ge: '≥', infin: '∞', minus: '−',
  dagger: '†', Dagger: '‡', permil: '‰', prime: '′', Prime: '″', ensp: ' ', emsp: ' ', thinsp: ' ', zwnj: '', zwj: '',
  iexcl: '¡', iquest: '¿', auml: 'ä', ouml: 'ö', uuml: 'ü', Auml: 'Ä', Ouml: 'Ö', Uuml: 'Ü', szlig: 'ß',
  eacute: 'é', egrave: 'è', ecirc: 'ê', aacute: 'á', agrave: 'à', acirc: 'â', ccedil: 'ç', ntilde: 'ñ', oacute: 'ó', iacute: 'í', uacute: 'ú'
}

export function decodeEntities (text: string): string {
  return text.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});/g, (m, body: string) => {
    if (body.startsWith('#')) {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10)
      if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd'
      return String.fromCodePoint(code)
    }
    return NAMED_ENTITIES[body] ?? m
  })
}

const DROPPED = 'script|style|noscript|template|svg|iframe|object|canvas|math'
const BLOCKS = 'address|article|aside|blockquote|body|caption|details|dialog|div|dl|dt|dd|fieldset|figcaption|figure|footer|form|h[1-6]|head|header|hr|html|legend|main|nav|ol|p|pre|section|summary|table|tbody|tfoot|thead|title|tr|ul'

function stripTags (s: string): string {
  return s.replace(/<\/?[a-zA-Z][^>]*>/g, '')
}

export function htmlToText (html: string): string {
  let s = html
    .replace(/<!--[\s\S]*?(?:-->|$)/g, '')
    .replace(/<!doctype[^>]*>/gi, '')
    .replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, '')
    .replace(new RegExp(`<(${DROPPED})\\b[^>]*>[\\s\\S]*?(?:</\\1\\s*>|$)`, 'gi'), '')
  // <pre> keeps its line breaks and indentation: set aside, brought back at the end.
  const pres: string[] = []
  s = s.replace(/<pre\b[^>]*>([\s\S]*?)(?:<\/pre\s*>|$)/gi, (_m, body: string) => {
    pres.push(decodeEntities(stripTags(body.replace(/<br\b[^>]*>/gi, '\n'))).replace(/^\n|\n$/g, ''))
    return `<div>\uE000${pres.length - 1}\uE000</div>`
  })
  s = s
    .replace(/[ \t\n\r\f]+/g, ' ') // source line breaks are spaces in HTML
    .replace(/<br\b[^>]*>/gi, '\n')
    .replace(/<li\b[^>]*>/gi, '\n- ')
    .replace(/<\/?(?:td|th)\b[^>]*>/gi, ' ')
    .replace(new RegExp(`</?(?:${BLOCKS})\\b[^>]*>`, 'gi'), '\n')
  s = decodeEntities(stripTags(s))
  return s
    .split('\n')
    .map(line => line.replace(/[ \t\f\v\r\u00a0\u2000-\u200a\u202f\u205f\u3000]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
    .replace(/\uE000(\d+)\uE000/g, (_m, i: string) => pres[Number(i)] ?? '')
}

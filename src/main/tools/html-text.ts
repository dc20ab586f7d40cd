import { convert, type HtmlToTextOptions } from 'html-to-text'

/**
 * HTML reduced to readable text by html-to-text (htmlparser2 underneath): the page's title, then
 * its body; links as their text followed by [absolute URL]; entities decoded as a browser does;
 * scripts, styles, embedded content, form controls, images and every attribute dropped. For a
 * model to read a page, not a renderer. Pure.
 */
export function htmlToText (html: string, pageUrl?: string): string {
  return convert(html, options(pageUrl))
    // no-break and other wide spaces read as spaces (&nbsp; glues words for layout only)
    .replace(/[\u00a0\u2000-\u200a\u202f\u205f\u3000]/g, ' ')
    .split('\n')
    .map(line => line.trimEnd())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

// What a reader of the text cannot use, or what the page hides from its readers.
const SKIPPED = ['script', 'style', 'noscript', 'template', 'svg', 'math', 'iframe', 'object', 'embed', 'canvas', 'img', 'picture', 'video', 'audio', 'input', 'textarea', 'select', 'button']
const HEADINGS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6']

/** Where a link points, for the text: absolute http(s) (resolved against the page), mailto, or a relative path kept when there is no page; '' (text only) for javascript:, data: and the like. */
export function linkTarget (href: string, pageUrl: string | undefined): string {
  const raw = href.trim()
  if (/^mailto:/i.test(raw)) return raw
  let url: URL
  try {
    url = pageUrl !== undefined ? new URL(raw, pageUrl) : new URL(raw)
  } catch {
    // no page to resolve against: a relative link is still worth showing, a malformed one is not
    return pageUrl === undefined && !/^[a-z][a-z0-9+.-]*:/i.test(raw) ? raw : ''
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : ''
}

function options (pageUrl: string | undefined): HtmlToTextOptions {
  return {
    wordwrap: false,
    baseElements: { selectors: ['title', 'body'], returnDomByDefault: true },
    // a hostile page nests without end: deeper content is cut (with the ellipsis), not a stack overflow
    limits: { maxDepth: 200, ellipsis: '…' },
    selectors: [
      ...SKIPPED.map(selector => ({ selector, format: 'skip' })),
      { selector: 'title', format: 'block' },
      {
        selector: 'a',
        options: {
          hideLinkHrefIfSameAsText: true,
          linkBrackets: ['[', ']'],
          // the raw attribute, not the formatter's (it strips "mailto:" and joins paths by hand)
          pathRewrite: (_path, _meta, elem) => linkTarget(elem.attribs?.href ?? '', pageUrl)
        }
      },
      ...HEADINGS.map(selector => ({ selector, options: { uppercase: false, leadingLineBreaks: 2 } })),
      { selector: 'ul', options: { itemPrefix: '- ' } },
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false, maxColumnWidth: 80 } }
    ]
  }
}

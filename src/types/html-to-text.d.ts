// Minimal types for html-to-text 10 (only what src/main/tools/html-text.ts uses; @types/html-to-text
// describes version 9, whose pathRewrite is not given the element).

declare module 'html-to-text' {
  interface DomElement { name?: string; attribs?: Record<string, string> }
  interface SelectorDefinition {
    selector: string
    format?: string
    options?: {
      uppercase?: boolean
      leadingLineBreaks?: number
      trailingLineBreaks?: number
      itemPrefix?: string
      hideLinkHrefIfSameAsText?: boolean
      linkBrackets?: [string, string] | false
      /** the link's href as the formatter sees it (without "mailto:"), the metadata, the element */
      pathRewrite?: (path: string, metadata: unknown, elem: DomElement) => string
      uppercaseHeaderCells?: boolean
      maxColumnWidth?: number
    }
  }
  export interface HtmlToTextOptions {
    wordwrap?: number | false | null
    baseElements?: { selectors?: string[]; returnDomByDefault?: boolean; orderBy?: 'selectors' | 'occurrence' }
    limits?: { maxDepth?: number; maxChildNodes?: number; maxInputLength?: number; ellipsis?: string }
    selectors?: SelectorDefinition[]
  }
  export function convert (html: string, options?: HtmlToTextOptions): string
}

// Syntax highlighting for fenced code in model replies: code in, tokens (kind + text) out.
// Hand-written rather than highlight.js (see the commit that added it): the tokens are data
// that React renders as text, so no HTML string is ever made; one linear pass, cheap enough
// to redo on every streamed token; a few kB instead of ~85 kB. Deliberately coarse: keywords,
// strings, comments, numbers, types, calls, plus tags, keys and diff lines where they matter.
// Total: every input gives tokens whose texts join back to exactly the input.

export type TokenKind =
  | 'keyword' | 'literal' | 'string' | 'comment' | 'number' | 'type' | 'function'
  | 'property' | 'tag' | 'attr' | 'meta' | 'variable' | 'inserted' | 'deleted'

/** A run of code; `kind` is absent for plain text (punctuation, names, spaces). */
export interface Token { text: string; kind?: TokenKind }

export type LanguageId =
  | 'typescript' | 'javascript' | 'json' | 'python' | 'bash' | 'diff' | 'go' | 'rust'
  | 'yaml' | 'html' | 'css' | 'sql' | 'c' | 'cpp' | 'java'

/** Longer code is shown plain: highlighting it would cost more than it helps. */
export const MAX_HIGHLIGHT_CHARS = 100_000

const ALIASES = new Map<string, LanguageId>(Object.entries({
  ts: 'typescript', typescript: 'typescript', tsx: 'typescript', mts: 'typescript', cts: 'typescript',
  js: 'javascript', javascript: 'javascript', jsx: 'javascript', mjs: 'javascript', cjs: 'javascript', node: 'javascript',
  json: 'json', jsonc: 'json', json5: 'json',
  py: 'python', python: 'python', python3: 'python', py3: 'python',
  bash: 'bash', sh: 'bash', shell: 'bash', zsh: 'bash', console: 'bash', 'shell-session': 'bash', shellsession: 'bash',
  diff: 'diff', patch: 'diff',
  go: 'go', golang: 'go',
  rs: 'rust', rust: 'rust',
  yaml: 'yaml', yml: 'yaml',
  html: 'html', htm: 'html', xhtml: 'html', xml: 'html', svg: 'html',
  css: 'css',
  sql: 'sql', psql: 'sql', postgresql: 'sql', postgres: 'sql', mysql: 'sql', sqlite: 'sql', plpgsql: 'sql',
  c: 'c', h: 'c',
  cpp: 'cpp', 'c++': 'cpp', cc: 'cpp', cxx: 'cpp', hpp: 'cpp', hh: 'cpp', hxx: 'cpp',
  java: 'java'
}))

/** The language a fence's info string names ("ts", "language-ts", "Python"), if we know it. */
export function languageOf (info: string): LanguageId | undefined {
  const key = info.trim().toLowerCase().replace(/^(language|lang)-/, '').replace(/^\./, '')
  return ALIASES.get(key)
}

/** Tokens for `code` in `lang`, or undefined when the language is unknown or the code too long (show it plain). */
export function highlight (code: string, lang: string | LanguageId | undefined): Token[] | undefined {
  const id = lang === undefined ? undefined : languageOf(lang)
  if (id === undefined || code.length > MAX_HIGHLIGHT_CHARS) return undefined
  switch (id) {
    case 'diff': return lexDiff(code)
    case 'yaml': return lexYaml(code)
    case 'html': return lexHtml(code)
    case 'css': return lexCss(code)
    default: return lexCode(code, SPECS[id])
  }
}

/** Collects tokens, joining neighbours of the same kind. */
class Sink {
  readonly out: Token[] = []
  push (text: string, kind?: TokenKind): void {
    if (text === '') return
    const last = this.out[this.out.length - 1]
    if (last !== undefined && last.kind === kind) last.text += text
    else this.out.push(kind === undefined ? { text } : { text, kind })
  }
}

const words = (s: string): ReadonlySet<string> => new Set(s.split(/\s+/).filter(Boolean))
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9'
const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\r'
const isIdentStart = (c: string | undefined): boolean => c !== undefined && /[\p{L}_$]/u.test(c)
const isIdentPart = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}_$]/u.test(c)

/** Scans a quoted string from its opening quote at `i`; ends at the closing quote, or (single-line) before the newline, or at the end. */
function scanString (code: string, i: number, close: string, multiline: boolean, escapes = true): number {
  let j = i + 1
  while (j < code.length) {
    const ch = code[j]
    if (escapes && ch === '\\') { j += 2; continue }
    if (code.startsWith(close, j)) return j + close.length
    if (ch === '\n' && !multiline) return j
    j++
  }
  return code.length
}

/** The end of a block comment or other delimited run opened at `from`: after `close`, or the end (still streaming). */
function scanTo (code: string, from: number, close: string): number {
  const at = code.indexOf(close, from)
  return at === -1 ? code.length : at + close.length
}

function lineEnd (code: string, i: number): number {
  const at = code.indexOf('\n', i)
  return at === -1 ? code.length : at
}

function scanNumber (code: string, i: number): number {
  const hex = code[i] === '0' && (code[i + 1] === 'x' || code[i + 1] === 'X')
  let j = i + 1
  while (j < code.length) {
    const ch = code[j] as string
    if (/[\w]/.test(ch)) { j++; continue }
    if (ch === '.' && isDigit(code[j + 1])) { j++; continue }
    if ((ch === '+' || ch === '-') && !hex && (code[j - 1] === 'e' || code[j - 1] === 'E') && isDigit(code[j + 1])) { j++; continue }
    break
  }
  return j
}

// ---- C-like and script languages: one lexer, a spec per language ----

interface CodeSpec {
  keywords: ReadonlySet<string>
  literals: ReadonlySet<string>
  types: ReadonlySet<string>
  /** names shown as calls even without parentheses (shell builtins) */
  builtins?: ReadonlySet<string>
  lineComments: readonly string[]
  blockComment?: readonly [string, string]
  /** quotes of single-line strings */
  quotes: string
  /** quotes of strings that may span lines (JS templates, Go raw strings) */
  multilineQuotes?: string
  /** quotes whose strings take no backslash escapes */
  rawQuotes?: string
  /** """ and ''' strings (Python, Java text blocks) */
  triple?: boolean
  /** letters that may prefix a string: f"…", r'…', b"…" */
  stringPrefixes?: RegExp
  /** keywords in any case (SQL) */
  caseless?: boolean
  /** capitalised names are types */
  capsTypes?: boolean
  /** `#` starts a comment only at the start of a word (shell) */
  hashNeedsSpace?: boolean
  /** $name, ${…}, $1 (shell) */
  dollarVars?: boolean
  /** @Decorator, @annotation */
  decorators?: boolean
  /** more characters that continue a name (shell: apt-get, /usr/local, file.txt are one word each) */
  wordChars?: string
  /** # directives at the start of a line (C, C++) */
  preprocessor?: boolean
  /** Rust: 'a lifetimes, r#"…"# strings, name! macros */
  rust?: boolean
  /** a string followed by ':' is a key (JSON) */
  keyStrings?: boolean
}

const JS_KEYWORDS = 'break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield async await get set as'
const TS_EXTRA = 'abstract declare enum implements interface keyof namespace private protected public readonly type satisfies infer is module override unique asserts'

const C_KEYWORDS = 'auto break case const continue default do else enum extern for goto if inline register restrict return sizeof static struct switch typedef union volatile while _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert _Thread_local'
const C_TYPES = 'char double float int long short signed unsigned void bool _Bool size_t ssize_t ptrdiff_t intptr_t uintptr_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t FILE'
const CPP_EXTRA = 'alignas alignof and asm catch class concept consteval constexpr constinit co_await co_return co_yield decltype delete explicit export friend mutable namespace new noexcept not operator or override final private protected public requires static_assert static_cast dynamic_cast reinterpret_cast const_cast template this thread_local throw try typeid typename using virtual xor'

const JAVASCRIPT: CodeSpec = {
  keywords: words(JS_KEYWORDS),
  literals: words('true false null undefined NaN Infinity'),
  types: words(''),
  lineComments: ['//'],
  blockComment: ['/*', '*/'],
  quotes: '"\'',
  multilineQuotes: '`',
  capsTypes: true,
  decorators: true
}

const SPECS: Record<Exclude<LanguageId, 'diff' | 'yaml' | 'html' | 'css'>, CodeSpec> = {
  javascript: JAVASCRIPT,
  // JavaScript's, with TypeScript's keywords and built-in types
  typescript: {
    ...JAVASCRIPT,
    keywords: words(JS_KEYWORDS + ' ' + TS_EXTRA),
    types: words('string number boolean any unknown never void object symbol bigint')
  },
  json: {
    keywords: words(''),
    literals: words('true false null'),
    types: words(''),
    lineComments: ['//'],
    blockComment: ['/*', '*/'],
    quotes: '"',
    keyStrings: true
  },
  python: {
    keywords: words('and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case type'),
    literals: words('True False None Ellipsis NotImplemented'),
    types: words('int float str bytes bool list dict set tuple frozenset complex object'),
    builtins: words('print len range open super isinstance enumerate zip map filter sorted'),
    lineComments: ['#'],
    quotes: '"\'',
    triple: true,
    stringPrefixes: /^(?:[rbuf]|rb|br|fr|rf)$/i,
    capsTypes: true,
    decorators: true
  },
  bash: {
    keywords: words('if then else elif fi for while until do done case esac in function return select time local export readonly declare unset shift exit break continue source alias'),
    literals: words('true false'),
    types: words(''),
    builtins: words('echo printf cd pwd read test eval exec trap kill wait set shopt umask sudo'),
    lineComments: ['#'],
    quotes: '"\'',
    rawQuotes: '\'',
    hashNeedsSpace: true,
    dollarVars: true,
    wordChars: '-./'
  },
  go: {
    keywords: words('break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var'),
    literals: words('true false nil iota'),
    types: words('bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr any comparable'),
    builtins: words('append cap close copy delete len make new panic print println recover'),
    lineComments: ['//'],
    blockComment: ['/*', '*/'],
    quotes: '"\'',
    multilineQuotes: '`',
    rawQuotes: '`'
  },
  rust: {
    keywords: words('as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while yield macro_rules union'),
    literals: words('true false None Some Ok Err'),
    types: words('i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box'),
    lineComments: ['//'],
    blockComment: ['/*', '*/'],
    quotes: '"',
    capsTypes: true,
    rust: true
  },
  sql: {
    keywords: words('select from where and or not insert into values update set delete create table drop alter add column index view primary key foreign references join inner left right full outer cross on as group by order having limit offset union all distinct case when then else end is in like between exists returning with begin commit rollback transaction default unique check constraint if asc desc cascade truncate grant revoke explain using natural recursive over partition window'),
    literals: words('true false null'),
    types: words('int integer bigint smallint serial bigserial text varchar char boolean bool date time timestamp timestamptz interval numeric decimal real float double precision json jsonb uuid blob bytea'),
    builtins: words('count sum avg min max coalesce now'),
    lineComments: ['--'],
    blockComment: ['/*', '*/'],
    quotes: '\'"`',
    caseless: true
  },
  c: {
    keywords: words(C_KEYWORDS),
    literals: words('true false NULL'),
    types: words(C_TYPES),
    lineComments: ['//'],
    blockComment: ['/*', '*/'],
    quotes: '"\'',
    preprocessor: true
  },
  cpp: {
    keywords: words(C_KEYWORDS + ' ' + CPP_EXTRA),
    literals: words('true false nullptr NULL'),
    types: words(C_TYPES + ' string vector map set unordered_map unique_ptr shared_ptr optional'),
    lineComments: ['//'],
    blockComment: ['/*', '*/'],
    quotes: '"\'',
    preprocessor: true,
    capsTypes: true
  },
  java: {
    keywords: words('abstract assert break case catch class const continue default do else enum extends final finally for goto if implements import instanceof interface native new package private protected public return static strictfp super switch synchronized this throw throws transient try volatile while var record sealed permits yield non-sealed'),
    literals: words('true false null'),
    types: words('boolean byte char double float int long short void String Object Integer Long Double Boolean List Map Set'),
    lineComments: ['//'],
    blockComment: ['/*', '*/'],
    quotes: '"\'',
    triple: true,
    capsTypes: true,
    decorators: true
  }
}

function lexCode (code: string, spec: CodeSpec): Token[] {
  const sink = new Sink()
  const n = code.length
  let i = 0
  let lineStart = true // nothing but spaces since the last newline
  // the end of the string whose opening quote is at q
  const stringAt = (q: number): number => {
    const quote = code[q] as string
    if (spec.triple === true && (code.startsWith('"""', q) || code.startsWith("'''", q))) return scanString(code, q + 2, quote.repeat(3), true)
    const raw = spec.rawQuotes?.includes(quote) === true
    const multi = spec.multilineQuotes?.includes(quote) === true
    return scanString(code, q, quote, multi, !raw)
  }
  const extra = spec.wordChars ?? ''
  const inWord = (ch: string | undefined): boolean => isIdentPart(ch) ? !(ch === '$' && spec.dollarVars === true) : ch !== undefined && extra.includes(ch)
  while (i < n) {
    const c = code[i] as string
    if (c === '\n') { sink.push(c); i++; lineStart = true; continue }
    if (isSpace(c)) { sink.push(c); i++; continue }
    const atLineStart = lineStart
    lineStart = false

    if (spec.preprocessor === true && atLineStart && c === '#') {
      const end = lineEnd(code, i)
      sink.push(code.slice(i, end), 'meta')
      i = end
      continue
    }
    const comment = spec.lineComments.find(p => code.startsWith(p, i))
    if (comment !== undefined && !(spec.hashNeedsSpace === true && i > 0 && !/\s/.test(code[i - 1] as string))) {
      const end = lineEnd(code, i)
      sink.push(code.slice(i, end), 'comment')
      i = end
      continue
    }
    if (spec.blockComment !== undefined && code.startsWith(spec.blockComment[0], i)) {
      const end = scanTo(code, i + spec.blockComment[0].length, spec.blockComment[1])
      sink.push(code.slice(i, end), 'comment')
      i = end
      continue
    }
    if (spec.rust === true && c === '\'') {
      // '\n' and 'x' are chars; 'a (no closing quote right after) is a lifetime
      if (code[i + 1] === '\\') {
        const end = scanString(code, i, '\'', false)
        sink.push(code.slice(i, end), 'string')
        i = end
        continue
      }
      const cp = code.codePointAt(i + 1)
      const width = cp !== undefined && cp > 0xffff ? 2 : 1
      if (cp !== undefined && code[i + 1 + width] === '\'') {
        sink.push(code.slice(i, i + 2 + width), 'string')
        i += 2 + width
        continue
      }
      if (isIdentStart(code[i + 1])) {
        let j = i + 2
        while (isIdentPart(code[j])) j++
        sink.push(code.slice(i, j), 'variable')
        i = j
        continue
      }
      sink.push(c)
      i++
      continue
    }
    if (spec.quotes.includes(c) || spec.multilineQuotes?.includes(c) === true) {
      const end = stringAt(i)
      pushString(sink, code, i, end, spec)
      i = end
      continue
    }
    if (isDigit(c) || (c === '.' && isDigit(code[i + 1]))) {
      const end = scanNumber(code, i)
      sink.push(code.slice(i, end), 'number')
      i = end
      continue
    }
    if (isIdentStart(c) && !(c === '$' && spec.dollarVars === true)) {
      let j = i + 1
      while (inWord(code[j])) j++
      const word = code.slice(i, j)
      const next = code[j]
      // string prefixes: f"…" r'…' b"…"
      if ((next === '"' || next === '\'') && spec.stringPrefixes?.test(word) === true) {
        const end = stringAt(j)
        sink.push(code.slice(i, end), 'string')
        i = end
        continue
      }
      if (spec.rust === true) {
        if ((word === 'r' || word === 'br') && (next === '"' || next === '#')) {
          let h = j
          while (code[h] === '#') h++
          if (code[h] === '"') {
            const end = scanTo(code, h + 1, '"' + '#'.repeat(h - j))
            sink.push(code.slice(i, end), 'string')
            i = end
            continue
          }
        }
        if (word === 'b' && (next === '"' || next === '\'')) {
          const end = scanString(code, j, next, next === '"')
          sink.push(code.slice(i, end), 'string')
          i = end
          continue
        }
        if (next === '!' && code[j + 1] !== '=') {
          sink.push(code.slice(i, j + 1), 'function')
          i = j + 1
          continue
        }
      }
      sink.push(word, classify(word, code, j, spec))
      i = j
      continue
    }
    if (spec.dollarVars === true && c === '$') {
      const next = code[i + 1]
      let end = i + 1
      if (atLineStart && next === ' ') { sink.push(c, 'meta'); i++; continue } // a "$ " prompt
      if (next === '{') end = Math.min(lineEnd(code, i), scanTo(code, i + 2, '}'))
      else if (isIdentStart(next) && next !== '$') { end = i + 2; while (isIdentPart(code[end]) && code[end] !== '$') end++ } else if (next !== undefined && /[0-9@#?$!*-]/.test(next)) end = i + 2
      sink.push(code.slice(i, end), end > i + 1 ? 'variable' : undefined)
      i = end
      continue
    }
    if (spec.decorators === true && c === '@' && isIdentStart(code[i + 1])) {
      let j = i + 2
      while (isIdentPart(code[j]) || (code[j] === '.' && isIdentStart(code[j + 1]))) j++
      sink.push(code.slice(i, j), 'meta')
      i = j
      continue
    }
    sink.push(c)
    i++
  }
  return sink.out
}

function pushString (sink: Sink, code: string, start: number, end: number, spec: CodeSpec): void {
  let kind: TokenKind = 'string'
  if (spec.keyStrings === true) {
    let k = end
    while (isSpace(code[k]) || code[k] === '\n') k++
    if (code[k] === ':') kind = 'property'
  }
  sink.push(code.slice(start, end), kind)
}

function classify (word: string, code: string, after: number, spec: CodeSpec): TokenKind | undefined {
  const key = spec.caseless === true ? word.toLowerCase() : word
  if (spec.keywords.has(key)) return 'keyword'
  if (spec.literals.has(key)) return 'literal'
  if (spec.types.has(key)) return 'type'
  let k = after
  while (isSpace(code[k])) k++
  if (code[k] === '(' || spec.builtins?.has(key) === true) return 'function'
  if (spec.capsTypes === true && /^[A-Z][\p{Ll}\p{N}]/u.test(word)) return 'type'
  return undefined
}

// ---- line-based and markup languages ----

function lexDiff (code: string): Token[] {
  const sink = new Sink()
  for (const line of code.split(/(?<=\n)/)) {
    const kind: TokenKind | undefined =
      /^(diff |index |\+\+\+ |--- |\+\+\+$|---$|new file|deleted file|similarity|rename )/.test(line) ? 'comment'
        : line.startsWith('@@') ? 'meta'
          : line.startsWith('+') ? 'inserted'
            : line.startsWith('-') ? 'deleted'
              : undefined
    // the newline stays plain, so a coloured line's background ends with its text
    const body = line.endsWith('\n') ? line.slice(0, -1) : line
    sink.push(body, kind)
    if (body.length < line.length) sink.push('\n')
  }
  return sink.out
}

const YAML_KEY = /^(?:"[^"\n]*"|'[^'\n]*'|[^\s#'"{}[\],&*!|>%@`][^:#\n]*?)(?=:(?:[ \t\n]|$))/
const YAML_LITERAL = /^(?:true|false|yes|no|on|off|null|~)$/i
const YAML_NUMBER = /^[-+]?(?:\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|0x[\da-fA-F]+|\.inf|\.nan)$/

function lexYaml (code: string): Token[] {
  const sink = new Sink()
  for (const line of code.split(/(?<=\n)/)) {
    let i = 0
    const n = line.length
    while (i < n && isSpace(line[i])) i++
    sink.push(line.slice(0, i))
    const rest = line.slice(i)
    if (rest.startsWith('#')) { pushLine(sink, rest, 'comment'); continue }
    if (/^(---|\.\.\.)(\s|$)/.test(rest)) { pushLine(sink, rest, 'meta'); continue }
    // list markers, then a key
    while (line[i] === '-' && (isSpace(line[i + 1]) || line[i + 1] === undefined || line[i + 1] === '\n')) {
      let j = i + 1
      while (isSpace(line[j])) j++
      sink.push(line.slice(i, j))
      i = j
    }
    const key = YAML_KEY.exec(line.slice(i))
    if (key !== null) {
      sink.push(key[0], 'property')
      i += key[0].length
    }
    lexYamlValue(sink, line, i)
  }
  return sink.out
}

function pushLine (sink: Sink, line: string, kind: TokenKind): void {
  const body = line.endsWith('\n') ? line.slice(0, -1) : line
  sink.push(body, kind)
  if (body.length < line.length) sink.push('\n')
}

function lexYamlValue (sink: Sink, line: string, from: number): void {
  let i = from
  const n = line.length
  while (i < n) {
    const c = line[i] as string
    if (isSpace(c) || c === '\n' || /[:,[\]{}|>-]/.test(c)) { sink.push(c); i++; continue }
    if (c === '#' && (i === 0 || isSpace(line[i - 1]))) { pushLine(sink, line.slice(i), 'comment'); return }
    if (c === '"' || c === '\'') {
      const end = scanString(line, i, c, false, c === '"')
      sink.push(line.slice(i, end), 'string')
      i = end
      continue
    }
    let j = i + 1
    while (j < n && !isSpace(line[j]) && line[j] !== '\n' && !/[,[\]{}]/.test(line[j] as string) && !(line[j] === ':' && (isSpace(line[j + 1]) || line[j + 1] === '\n' || line[j + 1] === undefined))) j++
    const word = line.slice(i, j)
    const kind: TokenKind | undefined =
      (c === '&' || c === '*') && word.length > 1 ? 'variable'
        : c === '!' ? 'meta'
          : YAML_LITERAL.test(word) ? 'literal'
            : YAML_NUMBER.test(word) ? 'number'
              : undefined
    sink.push(word, kind)
    i = j
  }
}

function lexHtml (code: string): Token[] {
  const sink = new Sink()
  const n = code.length
  let i = 0
  while (i < n) {
    if (code.startsWith('<!--', i)) {
      const end = scanTo(code, i + 4, '-->')
      sink.push(code.slice(i, end), 'comment')
      i = end
      continue
    }
    const c = code[i] as string
    if (c === '<' && (code[i + 1] === '!' || code[i + 1] === '?')) {
      const end = scanTo(code, i + 2, '>')
      sink.push(code.slice(i, end), 'meta')
      i = end
      continue
    }
    if (c === '<' && (/[A-Za-z]/.test(code[i + 1] ?? '') || (code[i + 1] === '/' && /[A-Za-z]/.test(code[i + 2] ?? '')))) {
      const closing = code[i + 1] === '/'
      let j = i + (closing ? 2 : 1)
      while (j < n && /[\w:.-]/.test(code[j] as string)) j++
      const name = code.slice(i + (closing ? 2 : 1), j).toLowerCase()
      sink.push(code.slice(i, j), 'tag')
      i = lexAttributes(sink, code, j)
      // script and style bodies in their own languages
      if (!closing && (name === 'script' || name === 'style') && code[i - 1] === '>' && code[i - 2] !== '/') {
        const closeTag = new RegExp(`</${name}`, 'ig')
        closeTag.lastIndex = i
        const end = closeTag.exec(code)?.index ?? n
        const inner = code.slice(i, end)
        for (const t of name === 'script' ? lexCode(inner, SPECS.javascript) : lexCss(inner)) sink.push(t.text, t.kind)
        i = end
      }
      continue
    }
    if (c === '&') {
      const m = /^&(?:#\d+|#x[\da-fA-F]+|\w+);/.exec(code.slice(i, i + 40))
      if (m !== null) { sink.push(m[0], 'literal'); i += m[0].length; continue }
    }
    let j = i + 1
    while (j < n && code[j] !== '<' && code[j] !== '&') j++
    sink.push(code.slice(i, j))
    i = j
  }
  return sink.out
}

/** Attributes up to and including the tag's '>' (or the end); returns where they stop. */
function lexAttributes (sink: Sink, code: string, from: number): number {
  const n = code.length
  let i = from
  let value = false // after '=': the next word is an unquoted value
  while (i < n) {
    const c = code[i] as string
    if (c === '>') { sink.push(c, 'tag'); return i + 1 }
    if (c === '/' && code[i + 1] === '>') { sink.push('/>', 'tag'); return i + 2 }
    if (c === '<') return i // a broken tag: let the next one start
    if (/\s/.test(c) || c === '=') { sink.push(c); i++; if (c === '=') value = true; continue }
    if (c === '"' || c === '\'') {
      const end = scanString(code, i, c, true, false)
      sink.push(code.slice(i, end), 'string')
      i = end
      value = false
      continue
    }
    let j = i + 1
    while (j < n && !/[\s=>"'<]/.test(code[j] as string) && !(code[j] === '/' && code[j + 1] === '>')) j++
    sink.push(code.slice(i, j), value ? 'string' : 'attr')
    value = false
    i = j
  }
  return n
}

function lexCss (code: string): Token[] {
  const sink = new Sink()
  const n = code.length
  // for each position, the next of '{' ';' '}': a name before '{' is in a selector
  const next = new Uint8Array(n + 1)
  for (let k = n - 1; k >= 0; k--) {
    const ch = code[k]
    next[k] = ch === '{' || ch === ';' || ch === '}' ? (ch as string).charCodeAt(0) : (next[k + 1] as number)
  }
  const selectorAt = (k: number): boolean => next[k] === 0x7b
  let prelude = false // after an @rule's name, up to its '{' or ';'
  let i = 0
  const isCssIdent = (ch: string | undefined): boolean => ch !== undefined && /[\w-]/.test(ch)
  while (i < n) {
    const c = code[i] as string
    if (code.startsWith('/*', i)) {
      const end = scanTo(code, i + 2, '*/')
      sink.push(code.slice(i, end), 'comment')
      i = end
      continue
    }
    if (c === '"' || c === '\'') {
      const end = scanString(code, i, c, false)
      sink.push(code.slice(i, end), 'string')
      i = end
      continue
    }
    if (c === '{' || c === '}' || c === ';') {
      prelude = false
      sink.push(c)
      i++
      continue
    }
    if (c === '@' && isCssIdent(code[i + 1])) {
      let j = i + 1
      while (isCssIdent(code[j])) j++
      sink.push(code.slice(i, j), 'keyword')
      prelude = true
      i = j
      continue
    }
    const selector = !prelude && selectorAt(i)
    if (c === '!' && code.startsWith('important', i + 1)) { sink.push('!important', 'keyword'); i += 10; continue }
    if (c === '#' && isCssIdent(code[i + 1])) {
      let j = i + 1
      while (isCssIdent(code[j])) j++
      // an id in a selector, a colour in a declaration
      sink.push(code.slice(i, j), selector ? 'attr' : 'number')
      i = j
      continue
    }
    if (isDigit(c) || ((c === '.' || c === '-' || c === '+') && isDigit(code[i + 1])) || (c === '-' && code[i + 1] === '.' && isDigit(code[i + 2]))) {
      let j = i + 1
      while (j < n && (isDigit(code[j]) || code[j] === '.')) j++
      while (j < n && /[a-zA-Z%]/.test(code[j] as string)) j++ // the unit
      sink.push(code.slice(i, j), 'number')
      i = j
      continue
    }
    if (selector && c === '.' && isCssIdent(code[i + 1])) {
      let j = i + 1
      while (isCssIdent(code[j])) j++
      sink.push(code.slice(i, j), 'type')
      i = j
      continue
    }
    if (selector && c === ':' && (code[i + 1] === ':' || /[a-z]/i.test(code[i + 1] ?? ''))) {
      let j = i + 1
      if (code[j] === ':') j++
      while (isCssIdent(code[j])) j++
      sink.push(code.slice(i, j), 'keyword')
      i = j
      continue
    }
    if (/[a-zA-Z_-]/.test(c) && !(c === '-' && !isCssIdent(code[i + 1]))) {
      let j = i + 1
      while (isCssIdent(code[j])) j++
      const word = code.slice(i, j)
      let k = j
      while (isSpace(code[k])) k++
      const kind: TokenKind | undefined =
        word.startsWith('--') ? 'variable'
          : code[j] === '(' ? 'function'
            : selector ? 'tag'
              : code[k] === ':' ? 'property'
                : undefined
      sink.push(word, kind)
      i = j
      continue
    }
    sink.push(c)
    i++
  }
  return sink.out
}

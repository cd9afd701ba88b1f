// marked-terminal ships no types; this declares the part of its API we use.
declare module 'marked-terminal' {
  import type { MarkedExtension } from 'marked';

  type Style = (text: string) => string;

  export interface TerminalRendererOptions {
    code?: Style;
    blockquote?: Style;
    html?: Style;
    heading?: Style;
    firstHeading?: Style;
    listitem?: Style;
    table?: Style;
    paragraph?: Style;
    strong?: Style;
    em?: Style;
    codespan?: Style;
    del?: Style;
    tab?: number;
    /** `## ` before a heading's text (default true). */
    showSectionPrefix?: boolean;
  }

  export function markedTerminal(options?: TerminalRendererOptions): MarkedExtension;
}

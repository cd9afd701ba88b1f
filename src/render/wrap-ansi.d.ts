// wrap-ansi 7 (CommonJS) ships no types; this declares the part of its API we use.
declare module 'wrap-ansi' {
  export default function wrapAnsi(
    text: string,
    columns: number,
    options?: { hard?: boolean; trim?: boolean; wordWrap?: boolean },
  ): string;
}

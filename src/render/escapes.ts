// What styled output may contain: SGR (colours, bold, underline) and OSC 8
// hyperlinks, BEL-terminated as `hyperlink` writes them, whose target has no
// control character. Anything else that reaches the terminal (cursor moves,
// titles, the clipboard, screen clears) is not ours. Matched here: an ESC that
// starts neither, a BEL that ends no hyperlink, every other control character.
const FOREIGN_CONTROL =
  /\u001B(?!\[[0-9;]*m|\]8;[^\u0000-\u001F\u007F-\u009F]*\u0007)|(?<!\u001B\]8;[^\u0000-\u001F\u007F-\u009F]*)\u0007|[\u0000-\u0006\u0008\u000B-\u001A\u001C-\u001F\u007F-\u009F]/g;

/**
 * Styled text (from marked-terminal, cli-table3, cli-highlight) with every
 * control character removed that does not belong to a styling sequence: those
 * libraries decode entities and pass text through, so this is checked last.
 */
export function onlyStyling(text: string): string {
  return text.replace(FOREIGN_CONTROL, '');
}

// What the one sanitizer takes out of text from the network, in one place: the renderer
// removes these, the link scanner ends an address at them, and the key scrubber looks for a
// key across them (a key split by one is still the key once the reader sees it).

/**
 * C0 controls except tab and newline, DEL and C1 controls (a character class's inside): text
 * from the network could otherwise move the cursor, retitle the terminal or forge hyperlinks.
 */
export const CONTROLS = '\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F';

/**
 * Bidi overrides, embeddings, isolates and marks, and zero-width characters (a character
 * class's inside): they reorder or hide what the reader sees (a stream id that reads as
 * another, a URL spelled backwards).
 */
export const INVISIBLES = '\\u061C\\u200B-\\u200F\\u202A-\\u202E\\u2060\\u2066-\\u2069\\uFEFF';

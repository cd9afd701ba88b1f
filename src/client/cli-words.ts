// Moved to the library's side (src/api/cli-words.ts); kept for the importers not yet moved.
export { commandFailure, outcomeOf, publishOptionsOf } from '../api/cli-words.js';

// The cost of a GraphQL operation, bounded before any work (PROTOCOL.md B7). Validation is
// quadratic in the fields a selection repeats, and each alias is one more copy of a post in
// every event the operation is sent: both are bounded here, by size, before `validate` runs.
import {
  BREAK,
  GraphQLError,
  Kind,
  Lexer,
  parse,
  Source,
  TokenKind,
  validate,
  visit,
  type DocumentNode,
  type GraphQLSchema,
} from 'graphql';

/** Characters of one operation's query and variables (as JSON) together. */
export const MAX_OPERATION_CHARACTERS = 64 * 1024;
/** Tokens of one query (comments are not tokens). Sized so the worst query it admits validates in a few ms. */
export const MAX_QUERY_TOKENS = 500;
/** Selection sets nested in one another; the schema's deepest useful query is 2. */
export const MAX_QUERY_DEPTH = 8;
/** Aliases in one document: each is another copy of a field in every event sent. */
export const MAX_QUERY_ALIASES = 8;

/** Which limit a document passed: `extensions.limit` of the error, for clients to branch on. */
export type DocumentLimit = 'size' | 'tokens' | 'depth' | 'aliases';

export interface OperationPayload {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

function limitError(limit: DocumentLimit, max: number, message: string): GraphQLError[] {
  return [new GraphQLError(message, { extensions: { code: 'limit-exceeded', limit, max } })];
}

/** Tokens of the query, counted up to one past the limit (a lexing error is thrown as GraphQL's syntax error). */
function countTokens(source: Source): number {
  const lexer = new Lexer(source);
  let count = 0;
  while (count <= MAX_QUERY_TOKENS && lexer.advance().kind !== TokenKind.EOF) count += 1;
  return count;
}

/** The variables' length as JSON; NaN when they nest deeper than the stack reaches (JSON.parse took them, JSON.stringify cannot). */
function variablesLength(variables: OperationPayload['variables']): number {
  try {
    return JSON.stringify(variables ?? null).length;
  } catch {
    return Number.NaN;
  }
}

/** The limit of depth or aliases the document passes, if any: one walk, stopped at the first. */
function shapeError(document: DocumentNode): GraphQLError[] | undefined {
  let depth = 0;
  let aliases = 0;
  let error: GraphQLError[] | undefined;
  visit(document, {
    SelectionSet: {
      enter() {
        depth += 1;
        if (depth <= MAX_QUERY_DEPTH) return undefined;
        error = limitError(
          'depth',
          MAX_QUERY_DEPTH,
          `the query nests selections more than ${MAX_QUERY_DEPTH} deep, the most the server allows`,
        );
        return BREAK;
      },
      leave() {
        depth -= 1;
      },
    },
    [Kind.FIELD](field) {
      if (field.alias === undefined) return undefined;
      aliases += 1;
      if (aliases <= MAX_QUERY_ALIASES) return undefined;
      error = limitError(
        'aliases',
        MAX_QUERY_ALIASES,
        `the query has more than ${MAX_QUERY_ALIASES} aliases, the most the server allows`,
      );
      return BREAK;
    },
  });
  return error;
}

/**
 * The operation's document, parsed and validated within the limits, or the errors to answer
 * it with. Nothing past a limit is parsed further: a document 20,000 selections deep costs
 * the lexer 500 tokens, not the parser its stack.
 */
export function checkedDocument(schema: GraphQLSchema, payload: OperationPayload): DocumentNode | GraphQLError[] {
  const { query, variables } = payload;
  const length = query.length + (query.length > MAX_OPERATION_CHARACTERS ? 0 : variablesLength(variables));
  if (Number.isNaN(length)) {
    return limitError('depth', MAX_QUERY_DEPTH, 'the variables nest too deep to be read');
  }
  if (length > MAX_OPERATION_CHARACTERS) {
    return limitError(
      'size',
      MAX_OPERATION_CHARACTERS,
      `the query and its variables (as JSON) are over ${MAX_OPERATION_CHARACTERS} characters, the most the server reads`,
    );
  }
  const source = new Source(query);
  let document: DocumentNode;
  try {
    if (countTokens(source) > MAX_QUERY_TOKENS) {
      return limitError(
        'tokens',
        MAX_QUERY_TOKENS,
        `the query has more than ${MAX_QUERY_TOKENS} tokens, the most the server parses`,
      );
    }
    document = parse(source, { maxTokens: MAX_QUERY_TOKENS });
  } catch (error) {
    if (error instanceof GraphQLError) return [error];
    throw error;
  }
  const refused = shapeError(document);
  if (refused) return refused;
  const errors = validate(schema, document);
  return errors.length > 0 ? [...errors] : document;
}

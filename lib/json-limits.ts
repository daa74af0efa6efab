import { fieldError, type BadRequestError } from './errors.ts';

/**
 * The deepest nesting of objects and arrays an input may have, on every transport (README, "API overview").
 * Deeper bodies are refused before anything walks them: a recursive walk over one nested 10,000 levels
 * overflows the stack.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The most object members and array items a JSON body may hold in all (README, "API overview"). Parsing,
 * guarding, validating and (with `Idempotency-Key`) hashing a body all cost time in proportion to its members,
 * on the one event loop every request shares: a body at this limit costs a few milliseconds, while 600,000 keys
 * in 7 MB blocked it for seconds (docs/decisions.md).
 */
export const MAX_JSON_MEMBERS = 10_000;

export interface JsonTextLimits {
  depth: number;
  members: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
/** Space and below: JSON's whitespace, and control characters the parser refuses anyway. */
const SPACE = 0x20;

/**
 * Which limit the JSON text passes, if any, in one pass over its characters without parsing it, stopping at
 * the first character past a limit: nesting of objects and arrays deeper than `depth`, or more than `members`
 * object members and array items in all. Brackets and commas inside strings do not count. Malformed text is
 * left to the parser to refuse.
 */
export function jsonTextExceeds(text: string, limits: JsonTextLimits): keyof JsonTextLimits | undefined {
  let depth = 0;
  let members = 0;
  // The last character outside strings and whitespace opened a container.
  let opened = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= SPACE) continue;
    // A container's first member counts at its first character; one that closes at once is empty.
    if (opened && c !== CLOSE_BRACE && c !== CLOSE_BRACKET && ++members > limits.members) return 'members';
    opened = false;
    if (c === QUOTE) {
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limits.depth) return 'depth';
      opened = true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
    else if (c === COMMA && ++members > limits.members) return 'members';
  }
  return undefined;
}

/**
 * The error refusing a JSON body, naming `body`, when its text passes a limit (`maxDepth`, MAX_JSON_MEMBERS);
 * undefined when it may be parsed.
 */
export function jsonBodyRefusal(text: string, maxDepth: number): BadRequestError | undefined {
  switch (jsonTextExceeds(text, { depth: maxDepth, members: MAX_JSON_MEMBERS })) {
    case 'depth':
      return fieldError('body', 'validation.max_depth', { max: maxDepth });
    case 'members':
      return fieldError('body', 'validation.max_members', { max: MAX_JSON_MEMBERS });
    default:
      return undefined;
  }
}

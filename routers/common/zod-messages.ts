import type { z } from 'zod';
import { isMessageKey, translate, type MessageKey, type MessageParams } from '../../lib/messages/index.ts';

type Issue = z.core.$ZodIssue;

function reason(issue: Issue): [MessageKey, MessageParams?] {
  // A schema may name its own catalogue key as the message (e.g. the username rule).
  if (isMessageKey(issue.message)) return [issue.message];
  switch (issue.code) {
    case 'invalid_type':
      // zod 4 leaves `input` out of issues unless asked, but its default message names what it received.
      if (issue.input === undefined && /received undefined$/.test(issue.message)) return ['validation.required'];
      if (issue.expected === 'int') return ['validation.integer'];
      if (issue.expected === 'boolean') return ['validation.boolean'];
      return [
        'validation.expected_type',
        { expected: `${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}` },
      ];
    case 'too_small':
      if (issue.origin === 'string') return ['validation.min_length', { min: String(issue.minimum) }];
      if (issue.origin === 'array') return ['validation.min_items', { min: String(issue.minimum) }];
      return ['validation.min_number', { min: String(issue.minimum) }];
    case 'too_big':
      if (issue.origin === 'string') return ['validation.max_length', { max: String(issue.maximum) }];
      if (issue.origin === 'array') return ['validation.max_items', { max: String(issue.maximum) }];
      return ['validation.max_number', { max: String(issue.maximum) }];
    case 'invalid_format':
      if (issue.format === 'uuid' || issue.format === 'guid') return ['validation.uuid'];
      if (issue.format === 'email') return ['validation.email'];
      if (issue.format === 'datetime') return ['validation.datetime'];
      return ['validation.pattern'];
    case 'invalid_value':
      return ['validation.one_of', { values: issue.values.map(String).join(', ') }];
    case 'unrecognized_keys':
      return ['validation.unknown_key'];
    default:
      return ['validation.invalid'];
  }
}

/** `page_size: must be at most 100`: the first zod issue, naming the field, in the caller's language. */
export function describeZodIssue(issue: Issue, locale: string): string {
  const field = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]].join('.') : issue.path.join('.');
  const [key, params] = reason(issue);
  const text = translate(key, params, locale);
  return field ? translate('validation.field', { field, reason: text }, locale) : text;
}

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { en } from '../web/src/i18n/en.ts';
import { zhCN } from '../web/src/i18n/zh-CN.ts';

const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

test('the web console has every string in English and Simplified Chinese, with the same placeholders', () => {
  const languages: Record<string, Record<string, string>> = { en, 'zh-CN': zhCN };
  const keys = new Set(Object.values(languages).flatMap((messages) => Object.keys(messages)));
  for (const [language, messages] of Object.entries(languages)) {
    for (const key of keys) {
      assert.ok(messages[key]?.trim(), `${language} has no text for ${key}`);
      assert.deepEqual(
        placeholders(messages[key]!),
        placeholders(en[key as keyof typeof en] ?? ''),
        `${language} ${key}`,
      );
    }
  }
});

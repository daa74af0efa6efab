import { en, type Catalogue, type MessageKey } from './en.ts';
import { zhCN } from './zh-CN.ts';

export type { MessageKey } from './en.ts';
export type MessageParams = Record<string, string | number>;

const catalogues: Record<string, Catalogue> = { en };

export function isMessageKey(text: string): text is MessageKey {
  return Object.hasOwn(en, text);
}

/** Adds a language (applications may add their own beside the built-in `en` and `zh-CN`). */
export function registerCatalogue(locale: string, catalogue: Catalogue): void {
  catalogues[locale] = catalogue;
}

registerCatalogue('zh-CN', zhCN);

/** Picks the best known locale from an Accept-Language header ("zh" finds "zh-CN"); unknown → en. */
export function pickLocale(header: string | undefined): string {
  if (!header) return 'en';
  for (const part of header.split(',')) {
    const tag = part.split(';')[0]?.trim().toLowerCase();
    if (!tag) continue;
    const exact = Object.keys(catalogues).find((l) => l.toLowerCase() === tag);
    if (exact) return exact;
    const lang = tag.split('-')[0];
    const byLanguage = Object.keys(catalogues).find((l) => l.toLowerCase().split('-')[0] === lang);
    if (byLanguage) return byLanguage;
  }
  return 'en';
}

export function translate(key: MessageKey, params: MessageParams = {}, locale = 'en'): string {
  const template = (catalogues[locale] ?? en)[key] ?? en[key];
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

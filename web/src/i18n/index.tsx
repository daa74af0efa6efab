import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';
import { en, type MessageKey } from './en.ts';

type Messages = Record<MessageKey, string>;

// English is the default and ships with the sign-in page; every other language is a chunk of its own, loaded
// when chosen, so each added language or string costs the first load nothing.
export const LANGUAGES = {
  en: { name: 'English', load: async (): Promise<Messages> => en },
  'zh-CN': { name: '简体中文', load: async (): Promise<Messages> => (await import('./zh-CN.ts')).zhCN },
};
export type Language = keyof typeof LANGUAGES;
type Translate = (key: MessageKey, values?: Record<string, string | number>) => string;

const loaded = new Map<Language, Messages>([['en', en]]);

async function load(language: Language): Promise<Messages> {
  const messages = loaded.get(language) ?? (await LANGUAGES[language].load());
  loaded.set(language, messages);
  return messages;
}

const STORAGE_KEY = 'console.language';

/** The saved choice, else the browser's languages in order (what it sends as Accept-Language). */
function initialLanguage(): Language {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved && saved in LANGUAGES) return saved as Language;
  const zh = navigator.languages.findIndex((l) => l.toLowerCase().startsWith('zh'));
  const english = navigator.languages.findIndex((l) => l.toLowerCase().startsWith('en'));
  return zh !== -1 && (english === -1 || zh < english) ? 'zh-CN' : 'en';
}

interface I18n {
  language: Language;
  setLanguage: (language: Language) => void;
  t: Translate;
}

const I18nContext = createContext<I18n | undefined>(undefined);

/** The language the API is asked to answer in (its error messages), kept beside the UI's. */
export let currentLanguage: Language = 'en';

/** Loads the language the page starts in; the provider is rendered after it, so no string is ever missing. */
export async function prepareI18n(): Promise<void> {
  currentLanguage = initialLanguage();
  document.documentElement.lang = currentLanguage;
  await load(currentLanguage);
}

export function I18nProvider({ children }: { children: ReactNode }) {
  const [language, setState] = useState(currentLanguage);
  const setLanguage = useCallback((next: Language) => {
    localStorage.setItem(STORAGE_KEY, next);
    void load(next).then(() => {
      currentLanguage = next;
      document.documentElement.lang = next;
      setState(next);
    });
  }, []);
  const value = useMemo<I18n>(() => {
    const messages = loaded.get(language) ?? en;
    const t: Translate = (key, values) =>
      messages[key].replace(/\{(\w+)\}/g, (whole, name: string) => String(values?.[name] ?? whole));
    return { language, setLanguage, t };
  }, [language, setLanguage]);
  return <I18nContext.Provider value={value}>{children}</I18nContext.Provider>;
}

export function useI18n(): I18n {
  const i18n = useContext(I18nContext);
  if (!i18n) throw new Error('useI18n outside I18nProvider');
  return i18n;
}

import { Select, type SelectProps } from '@mantine/core';
import { LANGUAGES, useI18n, type Language } from './i18n/index.tsx';

/** The UI's language (sign-in pages and Profile); the API is asked to answer in it too. */
export function LanguageSelect(props: Pick<SelectProps, 'size' | 'maw'>) {
  const { t, language, setLanguage } = useI18n();
  return (
    <Select
      label={t('lang.label')}
      data={Object.entries(LANGUAGES).map(([value, { name }]) => ({ value, label: name }))}
      value={language}
      onChange={(value) => value && setLanguage(value as Language)}
      allowDeselect={false}
      {...props}
    />
  );
}

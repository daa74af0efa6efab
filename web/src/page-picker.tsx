import { Pagination } from '@mantine/core';
import { useI18n } from './i18n/index.tsx';

/** Pages of a list, each control named (a number, or what Mantine calls the arrows); nothing while one page. */
export function PagePicker({
  pages,
  page,
  onChange,
}: {
  pages: number;
  page: number;
  onChange: (page: number) => void;
}) {
  const { t } = useI18n();
  if (pages <= 1) return null;
  return (
    <Pagination
      total={pages}
      value={page}
      onChange={onChange}
      aria-label={t('common.pages')}
      getControlProps={(control) => ({ 'aria-label': control })}
      getItemProps={(n) => ({ 'aria-label': String(n), 'aria-current': n === page ? 'page' : undefined })}
    />
  );
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import maxmind, { type CityResponse } from 'maxmind';
import { openGeoIp } from '../server/geoip.ts';
import { writeMmdb } from './support/mmdb-writer.ts';

const city = (iso: string, country: string, name: string) => ({
  country: { iso_code: iso, geoname_id: 2921044, names: { en: country, de: country } },
  city: { geoname_id: 2950159, names: { en: name } },
  location: { latitude: 52.5244, longitude: 13.4105, accuracy_radius: 200, time_zone: 'Europe/Berlin' },
  traits: { is_anycast: false },
  subdivisions: [{ iso_code: 'BE', names: { en: 'Land Berlin' } }],
});

function fixture(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'console-geoip-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'GeoLite2-City.mmdb');
  writeMmdb(file, [
    { cidr: '81.2.69.0/24', data: city('DE', 'Germany', 'Berlin') },
    { cidr: '2.125.160.0/24', data: city('GB', 'United Kingdom', 'London') },
    { cidr: '2.125.160.128/25', data: city('GB', 'United Kingdom', 'Boxford') }, // more specific inside the /24
    { cidr: '89.160.0.0/16', data: { country: { iso_code: 'SE', names: { en: 'Sweden' } } } }, // country only
    { cidr: '2001:db8::/32', data: city('FR', 'France', 'Paris') },
  ]);
  return { dir, file };
}

test('empty path disables geoip', async () => {
  assert.equal(await openGeoIp(''), undefined);
});

test('lookups against a GeoLite2-City-like fixture', async (t) => {
  const { file } = fixture(t);
  const geo = await openGeoIp(file);
  assert.ok(geo);
  assert.deepEqual(geo('81.2.69.142'), { country: 'DE', city: 'Berlin' });
  assert.deepEqual(geo('81.2.69.0'), { country: 'DE', city: 'Berlin' });
  assert.deepEqual(geo('81.2.69.255'), { country: 'DE', city: 'Berlin' });
  assert.deepEqual(geo('::ffff:81.2.69.142'), { country: 'DE', city: 'Berlin' });
  assert.deepEqual(geo('::FFFF:81.2.69.142'), { country: 'DE', city: 'Berlin' });
  assert.deepEqual(geo(' 81.2.69.142 '), { country: 'DE', city: 'Berlin' });
  assert.deepEqual(geo('2.125.160.1'), { country: 'GB', city: 'London' });
  assert.deepEqual(geo('2.125.160.200'), { country: 'GB', city: 'Boxford' });
  assert.deepEqual(geo('89.160.20.112'), { country: 'SE' });
  assert.deepEqual(geo('2001:db8::1'), { country: 'FR', city: 'Paris' });
  // neighbours, private, loopback, malformed
  for (const ip of [
    '81.2.70.1',
    '81.2.68.255',
    '10.0.0.1',
    '192.168.1.1',
    '127.0.0.1',
    '::1',
    '2001:db9::1',
    'not-an-ip',
    '',
    '999.1.1.1',
    '::ffff:not-an-ip',
    '1.2.3.4/24',
  ]) {
    assert.equal(geo(ip), undefined, ip);
  }
});

test('writer output is a well-formed MMDB for the maxmind reader', async (t) => {
  const { file } = fixture(t);
  const reader = await maxmind.open<CityResponse>(file);
  assert.equal(reader.metadata.ipVersion, 6);
  assert.equal(reader.metadata.recordSize, 32);
  assert.equal(reader.metadata.databaseType, 'GeoLite2-City');
  assert.equal(reader.metadata.binaryFormatMajorVersion, 2);
  assert.deepEqual(reader.metadata.languages, ['en']);
  assert.ok(Math.abs(reader.metadata.buildEpoch.getTime() - Date.now()) < 60_000);
  const rec = reader.get('81.2.69.142');
  assert.equal(rec?.location?.latitude, 52.5244);
  assert.equal(rec?.location?.accuracy_radius, 200);
  assert.equal(rec?.country?.names.de, 'Germany');
  assert.equal(rec?.subdivisions?.[0]?.names.en, 'Land Berlin');
  assert.equal(rec?.traits?.is_anycast, false);
  const [, prefix] = reader.getWithPrefixLength('81.2.69.142');
  assert.equal(prefix, 24); // the reader starts IPv4 lookups at the ::/96 node, so depth counts from there
  assert.deepEqual(reader.get('::51.2.69.142'), null);
  assert.equal(reader.get('::5102:458e')?.city?.names.en, 'Berlin'); // same address, IPv6 spelling
});

test('writer: IPv4-only tree, long strings, big and negative numbers', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'console-geoip-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'v4.mmdb');
  const long = 'x'.repeat(70_000);
  const data = {
    s: 'é'.repeat(200),
    m: 'y'.repeat(300),
    long,
    big: 4_000_000_000,
    neg: -5,
    pi: 3.25,
    ok: true,
    list: [1, 'a', []],
  };
  writeMmdb(file, [{ cidr: '1.2.3.4/32', data }], { ipVersion: 4, databaseType: 'Test' });
  const reader = await maxmind.open<Record<string, unknown> & CityResponse>(file);
  assert.equal(reader.metadata.ipVersion, 4);
  assert.deepEqual(reader.get('1.2.3.4'), data);
  assert.equal(reader.get('1.2.3.5'), null);
});

test('missing file throws a config-style error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'console-geoip-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const missing = join(dir, 'nope.mmdb');
  await assert.rejects(openGeoIp(missing), (err: Error) => {
    assert.equal(err.message, `server.geoip_db_path: cannot open ${missing} (file not found)`);
    return true;
  });
  await assert.rejects(openGeoIp(dir), /^Error: server\.geoip_db_path: cannot open .* \(is a directory\)$/);
});

test('garbage or empty file throws a config-style error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'console-geoip-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cases: [string, Buffer][] = [
    ['garbage.mmdb', Buffer.from('this is definitely not a maxmind database\n'.repeat(50))],
    ['random.mmdb', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))],
    ['empty.mmdb', Buffer.alloc(0)],
    ['gzip.mmdb.gz', Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0])],
  ];
  for (const [name, content] of cases) {
    const file = join(dir, name);
    writeFileSync(file, content);
    await assert.rejects(openGeoIp(file), (err: Error) => {
      assert.match(err.message, /^server\.geoip_db_path: cannot open .+ \(.+\)$/, name);
      assert.ok(err.message.includes(file), name);
      assert.ok(!err.message.includes('\n'), name);
      return true;
    });
  }
});

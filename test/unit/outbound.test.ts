import { describe, expect, it } from 'vitest';
import { internalHostOf, isPrivateAddress } from '../../src/lib/outbound.js';

// In production, notify_url and gm_url may only reach public unicast addresses.
describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
    '224.0.0.1', '255.255.255.255', '192.0.2.1', '198.18.0.1',
    '::', '::1', 'fe80::1', 'fd00::1', 'fec0::1', 'ff02::1', '2001:db8::1',
    // IPv6 forms carrying an internal IPv4 address
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '64:ff9b::7f00:1', '64:ff9b::a00:1', '2002:7f00:1::', '2002:a9fe:a9fe::1',
    // deprecated or tunnelled forms, refused whatever they carry
    '::7f00:1', '::808:808', '2001::1',
    // not an address
    'localhost', '', '1.2.3', '::ffff:999.0.0.1',
  ])('%s is internal', (ip) => {
    expect(isPrivateAddress(ip)).toBe(true);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '2a00:1450::1', '::ffff:808:808', '64:ff9b::808:808', '2002:808:808::1'])(
    '%s is public',
    (ip) => {
      expect(isPrivateAddress(ip)).toBe(false);
    },
  );
});

// What create-order and the games API refuse up front in production: hosts the URL alone shows
// internal. Names are left to the connect-time lookup.
describe('internalHostOf', () => {
  it.each([
    ['http://127.0.0.1:8080/notify', '127.0.0.1'],
    ['https://10.0.0.5/cb', '10.0.0.5'],
    ['http://169.254.169.254/latest', '169.254.169.254'],
    ['http://[::1]:80/x', '::1'],
    ['http://[::ffff:127.0.0.1]/x', '::ffff:7f00:1'],
    ['http://[64:ff9b::a00:1]/x', '64:ff9b::a00:1'],
    // the WHATWG parser's IPv4 forms
    ['http://2130706433/x', '127.0.0.1'],
    ['http://0x7f.1/x', '127.0.0.1'],
    ['http://localhost:3000/x', 'localhost'],
    ['http://LOCALHOST./x', 'localhost.'],
    ['http://game.localhost/x', 'game.localhost'],
  ])('%s is internal (%s)', (url, host) => {
    expect(internalHostOf(url)).toBe(host);
  });

  it.each(['https://game.example.com/notify', 'http://8.8.8.8/x', 'http://[2606:4700::1111]/x', 'http://localhost.example.com/x', 'not a url'])(
    '%s is not judged internal',
    (url) => {
      expect(internalHostOf(url)).toBeNull();
    },
  );
});

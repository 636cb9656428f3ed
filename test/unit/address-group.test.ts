import { describe, expect, it } from 'vitest';
import { addressGroup } from '../../src/lib/address-group.js';

describe('addressGroup (the unit wrong admin tokens are counted by)', () => {
  it('an IPv4 address is itself', () => {
    expect(addressGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('127.0.0.1')).toBe('127.0.0.1');
  });

  it('an IPv6 address is its /64, however it is written', () => {
    const group = '2001:db8:85a3:8d3::/64';
    for (const ip of ['2001:db8:85a3:8d3:1319:8a2e:370:7348', '2001:0db8:85a3:08d3::1', '2001:DB8:85A3:8D3:ffff:ffff:ffff:ffff', '2001:db8:85a3:8d3::', '2001:db8:85a3:8d3:0:0:1.2.3.4', '2001:db8:85a3:8d3::1%eth0']) {
      expect(addressGroup(ip)).toBe(group);
    }
    expect(addressGroup('2001:db8:85a3:8d4::1')).toBe('2001:db8:85a3:8d4::/64');
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
    expect(addressGroup('::')).toBe('0:0:0:0::/64');
    expect(addressGroup('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressGroup('1::')).toBe('1:0:0:0::/64');
    expect(addressGroup('1:2:3:4:5:6:7::')).toBe('1:2:3:4::/64');
    expect(addressGroup('::2:3:4:5:6:7:8')).toBe('0:2:3:4::/64');
  });

  it('an IPv4-mapped IPv6 address (a dual-stack socket\'s IPv4 client) is its IPv4 address', () => {
    expect(addressGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('::FFFF:127.0.0.1')).toBe('127.0.0.1');
    expect(addressGroup('0:0:0:0:0:ffff:cb00:7107')).toBe('203.0.113.7');
    // Not mapped: another prefix before ffff, or an IPv4-compatible form.
    expect(addressGroup('1::ffff:203.0.113.7')).toBe('1:0:0:0::/64');
    expect(addressGroup('::203.0.113.7')).toBe('0:0:0:0::/64');
  });

  it('what is not an IP address is returned as given', () => {
    for (const s of ['', 'localhost', 'unix:/tmp/s', '1.2.3', '2001:db8::g']) expect(addressGroup(s)).toBe(s);
  });
});

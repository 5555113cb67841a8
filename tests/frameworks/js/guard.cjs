// Preloaded into every capture app (node --require): no name lookup and no connection leaves
// loopback. A library that phones home fails loudly instead of reaching the internet.
'use strict';
const net = require('node:net');
const dns = require('node:dns');

const isLoopback = (host) =>
  host === undefined || host === null || host === 'localhost' ||
  /^127\./.test(host) || host === '::1' || host === '::ffff:127.0.0.1';

const realLookup = dns.lookup;
dns.lookup = function lookup(hostname, ...rest) {
  if (!isLoopback(hostname)) {
    process.stderr.write(`[capture app] BLOCKED name lookup of ${hostname}\n`);
    const callback = rest[rest.length - 1];
    const err = Object.assign(new Error(`network blocked in capture app: ${hostname}`), { code: 'ENOTFOUND' });
    if (typeof callback === 'function') return process.nextTick(callback, err);
    throw err;
  }
  return realLookup.call(this, hostname, ...rest);
};
const realPromisesLookup = dns.promises.lookup;
dns.promises.lookup = async function lookup(hostname, ...rest) {
  if (!isLoopback(hostname)) {
    process.stderr.write(`[capture app] BLOCKED name lookup of ${hostname}\n`);
    throw Object.assign(new Error(`network blocked in capture app: ${hostname}`), { code: 'ENOTFOUND' });
  }
  return realPromisesLookup.call(this, hostname, ...rest);
};

const realConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function connect(...args) {
  // net.connect() passes its normalized [options, callback] array; user code may pass
  // (options), (port, host) or (path).
  const options = Array.isArray(args[0]) ? args[0][0] : args[0];
  const host = typeof options === 'object' && options !== null
    ? (options.path ? 'localhost' : options.host ?? 'localhost')
    : (typeof args[1] === 'string' ? args[1] : 'localhost');
  if (!isLoopback(host)) {
    process.stderr.write(`[capture app] BLOCKED connect to ${host}\n`);
    throw new Error(`network blocked in capture app: ${host}`);
  }
  return realConnect.apply(this, args);
};

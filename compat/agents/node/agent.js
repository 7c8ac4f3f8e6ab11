'use strict';
// goreka compat agent: eureka-js-client (npm) configured from the environment (APP_NAME, PORT, EUREKA_URL,
// METADATA) and serving the agent control endpoints on 127.0.0.1:PORT. See README.md.

const http = require('http');
const { Eureka } = require('eureka-js-client');

function required(name) {
  const v = (process.env[name] || '').trim();
  if (!v) {
    console.error(`environment variable ${name} is required`);
    process.exit(2);
  }
  return v;
}

const APP_NAME = required('APP_NAME');
const PORT = parseInt(required('PORT'), 10);
let EUREKA_URL = required('EUREKA_URL');
if (!EUREKA_URL.endsWith('/')) EUREKA_URL += '/';
const INSTANCE_ID = `${APP_NAME}:${PORT}`;

const metadata = {};
for (const kv of (process.env.METADATA || '').split(',')) {
  const eq = kv.indexOf('=');
  if (eq > 0) metadata[kv.slice(0, eq).trim()] = kv.slice(eq + 1).trim();
}

function log(...args) {
  console.log(new Date().toISOString(), ...args);
}

// The library's own logger (levels debug|info|warn|error); LOG_LEVEL=debug shows every heartbeat/fetch.
const libLogger = {
  debug: (...a) => { if (process.env.LOG_LEVEL === 'debug') log('[eureka-js-client] DEBUG', ...a); },
  info: (...a) => log('[eureka-js-client] INFO', ...a),
  // getInstancesByAppId warns on every empty lookup; the control endpoints poll, so keep that one quiet.
  warn: (...a) => { if (!/^Unable to retrieve/.test(String(a[0]))) log('[eureka-js-client] WARN', ...a); },
  error: (...a) => log('[eureka-js-client] ERROR', ...a),
};

const base = `http://localhost:${PORT}`;
const client = new Eureka({
  cwd: __dirname, // eureka-client.yml / eureka-client-<env>.yml are looked up here (there are none)
  logger: libLogger,
  shouldUseDelta: true,
  instance: {
    instanceId: INSTANCE_ID,
    app: APP_NAME,
    hostName: 'localhost',
    ipAddr: '127.0.0.1',
    port: { $: PORT, '@enabled': true },
    vipAddress: APP_NAME,
    homePageUrl: `${base}/`,
    statusPageUrl: `${base}/health`,
    healthCheckUrl: `${base}/health`,
    dataCenterInfo: {
      '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo',
      name: 'MyOwn',
    },
    leaseInfo: { renewalIntervalInSecs: 1, durationInSecs: 3 },
    metadata,
  },
  eureka: {
    // serviceUrls entries are used verbatim as the base of every request (POST <base><APP>, GET <base>delta),
    // so they must end in "apps/". servicePath is only used when host/port are given instead.
    serviceUrls: { default: [`${EUREKA_URL}apps/`] },
    servicePath: '/eureka/apps/',
    heartbeatInterval: 1000,
    registryFetchInterval: 1000,
    fetchRegistry: true,
    registerWithEureka: true,
    filterUpInstances: true,
    preferIpAddress: false,
    maxRetries: 3,
    requestRetryDelay: 500,
  },
});

let started = false;
let stopping = false;

// ---- helpers over the client's local cache ----

function seen(service) {
  return client.getInstancesByAppId(service).filter((i) => i.status === 'UP');
}

// eureka-js-client computes no reconcile hash: compute apps__hashcode the Netflix way over its local copy
// (statuses in alphabetical order, NAME_count_ over every instance of every app).
function localHashCode(cache) {
  const counts = {};
  for (const app of Object.keys(cache.app)) {
    for (const inst of cache.app[app]) counts[inst.status] = (counts[inst.status] || 0) + 1;
  }
  return Object.keys(counts).sort().map((s) => `${s}_${counts[s]}_`).join('');
}

function raw() {
  const apps = {};
  for (const app of Object.keys(client.cache.app).sort()) {
    const rows = client.cache.app[app].map((i) => `${i.instanceId} ${i.status}`).sort();
    if (rows.length) apps[app] = rows;
  }
  return { localHashCode: localHashCode(client.cache), apps };
}

function send(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': `${type}; charset=utf-8` });
  res.end(body);
}

const rr = {};
function call(res, service) {
  const list = seen(service);
  if (!list.length) return send(res, 503, 'text/plain', `no instance of ${service}`);
  const n = (rr[service] = ((rr[service] || 0) + 1) % list.length);
  const inst = list[n];
  const port = inst.port && typeof inst.port === 'object' ? inst.port.$ : inst.port;
  const req = http.get({ host: inst.hostName, port, path: '/hello', timeout: 5000 }, (r) => {
    let data = '';
    r.setEncoding('utf8');
    r.on('data', (c) => { data += c; });
    r.on('end', () => send(res, r.statusCode, 'text/plain', data));
  });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', (e) => send(res, 502, 'text/plain', `call to ${inst.hostName}:${port} failed: ${e.message}`));
}

const server = http.createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (req.method !== 'GET') return send(res, 405, 'text/plain', 'method not allowed');
  if (path === '/hello') return send(res, 200, 'text/plain', `hello from ${INSTANCE_ID}`);
  if (!started) return send(res, 503, 'text/plain', 'starting');
  if (path === '/health') return send(res, 200, 'text/plain', 'UP');
  if (path === '/raw') return send(res, 200, 'application/json', JSON.stringify(raw()));
  let m = /^\/seen\/([^/]+)\/count$/.exec(path);
  if (m) return send(res, 200, 'text/plain', String(seen(m[1]).length));
  m = /^\/seen\/([^/]+)$/.exec(path);
  if (m) {
    const out = seen(m[1]).map((i) => ({
      instanceId: i.instanceId,
      host: i.hostName,
      port: i.port && typeof i.port === 'object' ? Number(i.port.$) : Number(i.port),
      metadata: i.metadata && typeof i.metadata === 'object' ? i.metadata : {},
    }));
    return send(res, 200, 'application/json', JSON.stringify(out));
  }
  m = /^\/call\/([^/]+)$/.exec(path);
  if (m) return call(res, m[1]);
  return send(res, 404, 'text/plain', 'not found');
});

server.listen(PORT, '127.0.0.1', () => {
  log(`AGENT-LISTENING ${INSTANCE_ID} on 127.0.0.1:${PORT}`);
  // start(): register (POST, expects 204) -> heartbeats -> registry fetches (full first, then deltas).
  // If registration fails, eureka-js-client gives up (no heartbeats, no fetches): /health then stays 503.
  client.start((err) => {
    if (err) {
      log('AGENT-START-FAILED', err && err.message);
      return;
    }
    started = true;
    log(`AGENT-STARTED ${INSTANCE_ID} against ${EUREKA_URL.replace(/\/\/[^@/]*@/, '//***@')}`);
  });
});

function shutdown(sig) {
  if (stopping) return;
  stopping = true;
  log(`AGENT-STOPPING ${INSTANCE_ID} on ${sig}: client.stop() (DELETE)`);
  const force = setTimeout(() => process.exit(0), 5000);
  client.stop((err) => {
    if (err) log('deregister failed:', err.message);
    clearTimeout(force);
    server.close();
    process.exit(0);
  });
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

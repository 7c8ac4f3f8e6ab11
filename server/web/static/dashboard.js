// goreka dashboard: live refresh, search, instance details and actions.
// Plain JS, no dependencies. Registrant data (names, ids, metadata, URLs) is
// only ever put into the page with textContent or setAttribute, never parsed
// as HTML, and only http(s) URLs become links.
(function () {
  'use strict';

  // The page refreshes its data when the registry changes: it watches
  // /goreka/api/v1/watch (Server-Sent Events) from the revision of its last
  // data and refreshes, debounced, on every change. The counters (renewals,
  // threshold) are not changes: they are polled, every WATCH_POLL_MS while
  // the watch is open and every POLL_MS when it is not (no EventSource, the
  // server refused it, the connection dropped).
  var POLL_MS = 5000;
  var WATCH_POLL_MS = 30000;
  var WATCH_DEBOUNCE_MS = 200;
  var WATCH_RETRY_MS = 30000;
  var body = document.body;
  var root = body.getAttribute('data-root') || './';
  var page = body.getAttribute('data-page');
  document.documentElement.className += ' js';

  var state = {
    data: null,
    query: '',
    open: new Set(),      // applications whose instance list is expanded
    openInst: new Set(),  // instances whose details are expanded (app NUL id)
    confirm: null,        // instance key awaiting a second click on Remove
    busy: null,           // instance key with an action in flight
    refs: [],             // instance refs by index, for the buttons
    sig: '',              // the applications last rendered, as JSON
    pressed: false,       // a pointer is down on the list
    stale: false          // the list changed while it was pressed
  };

  function $(id) { return document.getElementById(id); }

  // el builds an element; attrs.text sets textContent, attrs.cls the class,
  // anything else goes through setAttribute. Children are nodes or strings
  // (strings become text nodes).
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'text') e.textContent = String(v);
        else if (k === 'cls') e.className = v;
        else e.setAttribute(k, String(v));
      });
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }

  function setText(id, v) {
    var e = $(id);
    if (e && e.textContent !== String(v)) e.textContent = String(v);
  }

  function replaceKids(node, kids) {
    while (node.firstChild) node.removeChild(node.firstChild);
    kids.forEach(function (k) { node.appendChild(k); });
  }

  // httpHref mirrors the server's rule: only absolute http(s) URLs link.
  function httpHref(u) {
    if (typeof u !== 'string' || !/^https?:\/\/[^\s]/i.test(u.trim())) return '';
    try { var p = new URL(u.trim()); return (p.protocol === 'http:' || p.protocol === 'https:') ? p.href : ''; } catch (e) { return ''; }
  }

  function link(href, text, blank) {
    var h = httpHref(href);
    if (!h) return document.createTextNode(text);
    return el('a', { href: h, target: blank ? '_blank' : null, rel: blank ? 'noopener noreferrer' : null, text: text });
  }

  // ---- live status -------------------------------------------------------

  function live(ok, msg) {
    var e = $('live');
    if (!e) return;
    e.className = 'live ' + (ok ? 'ok' : 'err');
    e.textContent = ok ? 'live' : 'offline';
    e.title = msg + (watch.open ? ' (watching changes)' : ' (polling every ' + POLL_MS / 1000 + ' s)');
    e.setAttribute('data-mode', watch.open ? 'watch' : 'poll');
  }

  var timer = null;
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, watch.open ? WATCH_POLL_MS : POLL_MS);
  }

  // ---- the watch ---------------------------------------------------------

  var watch = { es: null, open: false, retryAt: 0, debounce: null };

  function changed() {
    clearTimeout(watch.debounce);
    watch.debounce = setTimeout(refresh, WATCH_DEBOUNCE_MS);
  }

  function stopWatch(retry) {
    if (watch.es) watch.es.close();
    watch.es = null;
    watch.open = false;
    if (retry) watch.retryAt = Date.now() + WATCH_RETRY_MS;
  }

  // startWatch subscribes to the changes after rev (the revision of the
  // data just rendered), unless a watch runs or failed recently.
  function startWatch(rev) {
    if (!window.EventSource || watch.es || Date.now() < watch.retryAt || typeof rev !== 'number') return;
    var es = new EventSource(root + 'goreka/api/v1/watch?since=' + rev, { withCredentials: true });
    watch.es = es;
    es.addEventListener('open', function () { watch.open = true; live(true, 'Updated ' + (state.data ? state.data.time : '')); schedule(); });
    es.addEventListener('change', changed);
    es.addEventListener('snapshot', changed);
    // Fell behind: start again from the current data, not from a snapshot.
    es.addEventListener('lagged', function () { stopWatch(false); refresh(); });
    es.addEventListener('error', function () {
      // CONNECTING: the browser reconnects by itself (with Last-Event-ID);
      // poll meanwhile. CLOSED: refused (401, 403 before the start-up
      // sync, not an event stream): poll, and try again later.
      watch.open = false;
      if (es.readyState === 2) stopWatch(true);
      schedule();
    });
  }

  function refresh() {
    clearTimeout(timer);
    if (document.hidden) { schedule(); return Promise.resolve(); }
    return fetch(root + 'goreka/api/dashboard', { credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json' } })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) throw new Error('not authorised (HTTP ' + r.status + ')');
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.json();
      })
      .then(function (d) {
        state.data = d;
        render(d);
        live(true, 'Updated ' + d.time);
        startWatch(d.revision);
      })
      .catch(function (e) { live(false, 'Live refresh failed: ' + e.message); })
      .then(schedule);
  }

  document.addEventListener('visibilitychange', function () { if (!document.hidden) refresh(); });

  // ---- rendering ---------------------------------------------------------

  function render(d) {
    setText('environment', d.environment);
    setText('datacenter', d.datacenter);
    setText('currentTime', d.time);
    setText('upTime', d.uptime);
    setText('leaseExpirationEnabled', String(d.leaseExpirationEnabled));
    setText('renewsThreshold', d.renewsThreshold);
    setText('renewsLastMin', d.renewsLastMinute);
    setText('chartThreshold', d.renewsThreshold);
    setText('expectedClients', d.expectedClients);
    setText('selfPreservation', d.selfPreservationEnabled ? 'on' : 'off');
    renderBanner(d.banner);
    renderHealthAlert(d.healthAlert);
    renderLifecycle(d);
    renderReplicas(d);
    renderChart(d.renewsHistory || [], d.renewsThreshold);
    if (page === 'status') {
      // Re-render the list only when it changed, and never between a
      // button's press and release (that would swallow the click).
      var sig = JSON.stringify(d.applications);
      if (sig !== state.sig) {
        state.sig = sig;
        if (state.pressed) state.stale = true; else renderInstances();
      }
      renderPairs('generalInfo', d.generalInfo);
      renderPairs('instanceInfo', d.instanceInfo);
    }
  }

  function renderBanner(text) {
    var b = $('banner');
    if (!b) return;
    var cur = b.textContent;
    if (cur === (text || '')) return;
    replaceKids(b, text ? [el('h4', { id: 'uptime' }, [el('font', { size: '+1', color: 'red' }, [el('b', { text: text })])])] : []);
  }

  // The health probes' guard banner, same markup as the template's.
  function renderHealthAlert(text) {
    var b = $('healthAlert');
    if (!b || b.textContent === (text || '')) return;
    replaceKids(b, text ? [el('h4', null, [el('font', { size: '+1', color: 'red' }, [el('b', { text: text })])])] : []);
  }

  // The lifecycle section: counts per state, the instances worth a look
  // (with the DOWN-by-probe reason as text), and how many are left out.
  function renderLifecycle(d) {
    var counts = $('lifecycleCounts');
    if (!counts || !d.lifecycle) return;
    var kids = [];
    d.lifecycle.forEach(function (c) {
      kids.push(el('span', { cls: 'lifecycle-' + String(c.state).replace(/[^a-z]/g, '') }, [el('b', { text: c.state }), ' ' + c.count]));
      kids.push(document.createTextNode(' '));
    });
    replaceKids(counts, kids);
    var t = $('lifecycleInstances');
    if (t) {
      var rows = (d.lifecycleInstances || []).map(function (r) {
        return el('tr', null, [r.app, r.instanceId, r.state, r.status, r.lastHeartbeat, r.lastProbe, r.note].map(function (v) {
          return el('td', { text: v || '' });
        }));
      });
      if (!rows.length) rows = [el('tr', null, [el('td', { colspan: 7, text: 'No instances' })])];
      replaceKids(t.tBodies[0], rows);
    }
    setText('lifecycleMore', d.lifecycleMore ? 'and ' + d.lifecycleMore + ' more (all up, never probed).' : '');
  }

  function renderReplicas(d) {
    var ul = $('replicas');
    if (ul) {
      replaceKids(ul, d.replicas.map(function (p) {
        return el('li', { cls: 'list-group-item' }, [link(p.url, p.host, false)]);
      }));
    }
    var t = $('replication');
    if (!t) return;
    var rows = d.peers.map(function (p) {
      return el('tr', null, [
        el('td', { text: p.url }),
        el('td', null, [el('span', { cls: 'pill ' + (p.healthy ? 'ok' : 'bad'), text: p.state })]),
        el('td', { text: p.queueDepth }),
        el('td', { text: p.lag }),
        el('td', { text: p.lastSuccess }),
        el('td', { text: p.lastError })
      ]);
    });
    if (!rows.length) rows = [el('tr', null, [el('td', { colspan: 6, text: 'No peers' })])];
    replaceKids(t.tBodies[0], rows);
    renderRegions(d);
    renderXDS(d);
  }

  // Connected xDS clients (goreka.xds.enabled); the table exists only when xDS is served.
  function renderXDS(d) {
    var t = $('xdsClients');
    if (!t || !d.xdsClients) return;
    var rows = d.xdsClients.map(function (c) {
      return el('tr', null, [
        el('td', { text: c.node }),
        el('td', { text: c.kind }),
        el('td', { text: c.namespace }),
        el('td', { text: c.zone }),
        el('td', { text: c.acked }),
        el('td', { text: c.since }),
        el('td', { text: c.agent }),
        el('td', { text: c.nack })
      ]);
    });
    if (!rows.length) rows = [el('tr', null, [el('td', { colspan: 8, text: 'No xDS clients connected' })])];
    replaceKids(t.tBodies[0], rows);
  }

  // Remote regions (eureka.server.remote-region-urls-with-name); the table exists only when some are set.
  function renderRegions(d) {
    var t = $('remoteRegions');
    if (!t || !d.remoteRegions) return;
    replaceKids(t.tBodies[0], d.remoteRegions.map(function (r) {
      return el('tr', null, [
        el('td', { text: r.name }),
        el('td', { text: r.url }),
        el('td', null, [el('span', { cls: 'pill ' + (r.healthy ? 'ok' : 'bad'), text: r.state })]),
        el('td', { text: r.lastSuccess }),
        el('td', { text: r.applications }),
        el('td', { text: r.instances }),
        el('td', { text: r.lastError })
      ]);
    }));
  }

  // Same layout as newChart in dashboard.go.
  function renderChart(hist, threshold) {
    var svg = $('chart');
    if (!svg) return;
    var W = 600, H = 120;
    var top = Math.max(threshold, 1);
    hist.forEach(function (c) { top = Math.max(top, c); });
    var mx = top + Math.floor(top / 10) + 1;
    var y = function (n) { return H - n * H / mx; };
    var pts = hist.map(function (c, i) {
      return (W * (i + 60 - hist.length) / 59).toFixed(1) + ',' + y(c).toFixed(1);
    }).join(' ');
    svg.querySelector('.renews').setAttribute('points', pts);
    var th = svg.querySelector('.threshold');
    th.setAttribute('y1', y(threshold));
    th.setAttribute('y2', y(threshold));
    var ymax = svg.querySelector('.ymax');
    if (ymax) ymax.textContent = String(mx);
  }

  function renderPairs(id, pairs) {
    var t = $(id);
    if (!t) return;
    replaceKids(t.tBodies[0], (pairs || []).map(function (p) {
      return el('tr', null, [el('td', { text: p[0] }), el('td', { text: p[1] })]);
    }));
  }

  var ORDER = { UP: 0, DOWN: 1, STARTING: 2, OUT_OF_SERVICE: 3, UNKNOWN: 4 };

  function groupsOf(instances) {
    var m = {};
    instances.forEach(function (i) { (m[i.status] = m[i.status] || []).push(i); });
    return Object.keys(m).sort(function (a, b) {
      var oa = a in ORDER ? ORDER[a] : 9, ob = b in ORDER ? ORDER[b] : 9;
      return oa - ob || (a < b ? -1 : a > b ? 1 : 0);
    }).map(function (s) { return { status: s, instances: m[s] }; });
  }

  // statusCell renders Spring's status column: "<b>UP</b> (n) - id, id".
  function statusCell(instances) {
    var td = el('td');
    groupsOf(instances).forEach(function (g) {
      var head = [el('b', { text: g.status }), ' (' + g.instances.length + ') - '];
      if (g.status === 'UP') head.forEach(function (n) { td.appendChild(typeof n === 'string' ? document.createTextNode(n) : n); });
      else td.appendChild(el('font', { color: 'red', size: '+1' }, head));
      g.instances.forEach(function (i, k) {
        if (k) td.appendChild(document.createTextNode(', '));
        td.appendChild(i.link ? el('a', { href: httpHref(i.link) || null, target: '_blank', rel: 'noopener noreferrer', text: i.id }) : document.createTextNode(i.id));
        if (i.static) { td.appendChild(document.createTextNode(' ')); td.appendChild(staticBadge(i)); }
      });
      td.appendChild(el('br'));
    });
    return td;
  }

  function tokens(q) {
    return q.toLowerCase().split(/\s+/).filter(Boolean);
  }

  // haystack is what the search box looks at: app, id, host, ip, status,
  // VIPs and metadata as "key=value".
  function haystack(i) {
    var parts = [i.app, i.id, i.hostName, i.ipAddr, i.status, i.overriddenStatus, i.vipAddress, i.secureVipAddress];
    var md = i.metadata || {};
    Object.keys(md).forEach(function (k) { parts.push(k + '=' + md[k]); });
    return parts.join('\n').toLowerCase();
  }

  function matches(toks, i) {
    if (!toks.length) return true;
    var h = i._hay || (i._hay = haystack(i));
    return toks.every(function (t) { return h.indexOf(t) >= 0; });
  }

  function keyOf(i) { return i.app + '\u0000' + i.id; }

  function renderInstances() {
    var d = state.data;
    var table = $('instances');
    if (!d || !table) return;
    var toks = tokens(state.query);
    var rows = [];
    var shownApps = 0, shownInst = 0, total = 0;
    state.refs = [];
    d.applications.forEach(function (app) {
      total += app.instances.length;
      var hits = app.instances.filter(function (i) { return matches(toks, i); });
      if (!hits.length) return;
      shownApps++;
      shownInst += hits.length;
      var open = state.open.has(app.name) || toks.length > 0;
      var n = app.instances.length;
      var toggle = el('button', { cls: 'toggle', type: 'button', 'data-act': 'app', 'data-i': state.refs.length,
        'aria-expanded': String(open), title: open ? 'Hide instances' : 'Show instances', text: open ? '\u25BE' : '\u25B8' });
      state.refs.push({ app: app.name });
      rows.push(el('tr', { cls: 'app', 'data-app': app.name }, [
        el('td', null, [toggle, el('b', { text: app.name })]),
        el('td', null, [el('b', { text: 'n/a' }), ' (' + n + ')']),
        el('td', null, [el('b'), ' (' + n + ')']),
        statusCell(app.instances)
      ]));
      if (open) rows.push(detailRow(hits));
    });
    if (!rows.length) {
      rows.push(el('tr', null, [el('td', { colspan: 4, text: total ? 'No instances match the filter' : 'No instances available' })]));
    }
    replaceKids(table.tBodies[0], rows);
    setText('matchCount', toks.length
      ? shownApps + ' of ' + d.applications.length + ' applications, ' + shownInst + ' of ' + total + ' instances match'
      : d.applications.length + ' applications, ' + total + ' instances');
  }

  function detailRow(instances) {
    var head = el('tr', null, ['Instance', 'Status', 'Host', 'IP', 'Port', 'Last renewal', 'Actions'].map(function (h) { return el('th', { text: h }); }));
    var rows = [head];
    instances.forEach(function (i) {
      var key = keyOf(i);
      var idx = state.refs.length;
      state.refs.push({ app: i.app, id: i.id, key: key });
      var open = state.openInst.has(key);
      rows.push(el('tr', { cls: 'inst-row', 'data-id': i.id }, [
        el('td', null, [
          el('button', { cls: 'toggle', type: 'button', 'data-act': 'inst', 'data-i': idx, 'aria-expanded': String(open),
            title: 'Details', text: open ? '\u25BE' : '\u25B8' }),
          link(i.link, i.id, true)
        ].concat(i.static ? [' ', staticBadge(i)] : [])),
        el('td', null, [el('span', { cls: 'status ' + String(i.status).replace(/[^A-Z_]/g, ''), text: i.status })]),
        el('td', { text: i.hostName }),
        el('td', { text: i.ipAddr }),
        el('td', { text: i.securePort ? i.port + ' / ' + i.securePort + ' (secure)' : (i.port || '') }),
        el('td', { text: i.static ? (i.source || 'static') + ': no heartbeats' : (i.lastRenewal || '') }),
        el('td', null, actions(i, idx, key))
      ]));
      if (open) rows.push(el('tr', { cls: 'more' }, [el('td', { colspan: 7 }, [details(i)])]));
    });
    return el('tr', { cls: 'detail' }, [el('td', { colspan: 4 }, [el('table', { cls: 'inst' }, [el('tbody', null, rows)])])]);
  }

  function staticBadge(i) {
    if (i.source) {
      return el('span', { cls: 'static', title: 'imported from ' + i.source + ': no lease, not replicated, withdrawn when its source withdraws it', text: i.source });
    }
    return el('span', { cls: 'static', title: 'static registration (goreka.static-instances): never expires, not replicated', text: 'static' });
  }

  function actions(i, idx, key) {
    var busy = state.busy === key;
    var out = [];
    if (i.status !== 'OUT_OF_SERVICE') {
      out.push(el('button', { cls: 'act', type: 'button', 'data-act': 'oos', 'data-i': idx, disabled: busy ? 'disabled' : null,
        title: 'PUT status?value=OUT_OF_SERVICE', text: 'Take out of service' }));
    }
    if (i.status === 'OUT_OF_SERVICE' || (i.overriddenStatus && i.overriddenStatus !== 'UNKNOWN')) {
      out.push(el('button', { cls: 'act', type: 'button', 'data-act': 'back', 'data-i': idx, disabled: busy ? 'disabled' : null,
        title: 'DELETE status override', text: 'Put back in service' }));
    }
    if (i.static) return out; // the configuration or the importer owns it: goreka refuses a cancel
    var confirming = state.confirm === key;
    out.push(el('button', { cls: 'act danger' + (confirming ? ' confirm' : ''), type: 'button', 'data-act': 'remove', 'data-i': idx,
      disabled: busy ? 'disabled' : null, title: 'DELETE the lease (the instance re-registers on its next heartbeat)',
      text: confirming ? 'Click again to remove' : 'Remove' }));
    return out;
  }

  function kvTable(pairs) {
    return el('table', { cls: 'kv' }, [el('tbody', null, pairs.map(function (p) {
      return el('tr', null, [el('td', { text: p[0] }), el('td', null, [typeof p[1] === 'string' ? document.createTextNode(p[1]) : p[1]])]);
    }))]);
  }

  function details(i) {
    var lease = kvTable([
      ['registered', i.registered || ''],
      ['last renewal', i.lastRenewal || ''],
      ['service up', i.serviceUp || ''],
      ['last dirty', i.lastDirty || ''],
      ['lease duration', i.durationSecs + ' s'],
      ['renewal interval', i.renewalIntervalSecs + ' s'],
      ['overridden status', i.overriddenStatus || ''],
      ['vip / secure vip', (i.vipAddress || '') + ' / ' + (i.secureVipAddress || '')]
    ]);
    var urls = kvTable([
      ['status page', link(i.statusPageUrl, i.statusPageUrl || '', true)],
      ['home page', link(i.homePageUrl, i.homePageUrl || '', true)],
      ['health check', link(i.healthCheckUrl, i.healthCheckUrl || '', true)]
    ]);
    var md = i.metadata || {};
    var keys = Object.keys(md).sort();
    var meta = keys.length ? kvTable(keys.map(function (k) { return [k, md[k]]; })) : el('p', { cls: 'muted', text: 'no metadata' });
    return el('div', { cls: 'details-grid' }, [
      el('div', null, [el('h2', { text: 'Lease' }), lease]),
      el('div', null, [el('h2', { text: 'URLs' }), urls]),
      el('div', { cls: 'metadata' }, [el('h2', { text: 'Metadata' }), meta])
    ]);
  }

  // ---- actions -----------------------------------------------------------

  function flash(msg, isError) {
    var f = $('flash');
    if (!f) return;
    f.className = isError ? 'error' : '';
    f.textContent = msg;
  }

  var confirmTimer = null;

  function act(kind, ref) {
    var base = root + 'eureka/apps/' + encodeURIComponent(ref.app) + '/' + encodeURIComponent(ref.id);
    var req = {
      oos: { method: 'PUT', url: base + '/status?value=OUT_OF_SERVICE', done: 'taken out of service' },
      back: { method: 'DELETE', url: base + '/status', done: 'put back in service (status override removed)' },
      remove: { method: 'DELETE', url: base, done: 'removed' }
    }[kind];
    state.busy = ref.key;
    state.confirm = null;
    renderInstances();
    fetch(req.url, { method: req.method, credentials: 'same-origin', cache: 'no-store' })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) {
          throw new Error('refused: you are not authorised (HTTP ' + r.status + '). Sign in with an operator account and retry.');
        }
        if (r.status === 404) throw new Error('not found: the instance is no longer registered (HTTP 404)');
        if (!r.ok) throw new Error('failed: HTTP ' + r.status);
        flash(ref.app + ' / ' + ref.id + ' ' + req.done + '.', false);
      })
      .catch(function (e) { flash(ref.app + ' / ' + ref.id + ': ' + e.message, true); })
      .then(function () { state.busy = null; return refresh(); });
  }

  function onClick(ev) {
    var b = ev.target.closest('button[data-act]');
    if (!b || b.disabled) return;
    var ref = state.refs[Number(b.getAttribute('data-i'))];
    if (!ref) return;
    switch (b.getAttribute('data-act')) {
      case 'app':
        if (state.open.has(ref.app)) state.open.delete(ref.app); else state.open.add(ref.app);
        renderInstances();
        break;
      case 'inst':
        if (state.openInst.has(ref.key)) state.openInst.delete(ref.key); else state.openInst.add(ref.key);
        renderInstances();
        break;
      case 'remove':
        if (state.confirm !== ref.key) {
          state.confirm = ref.key;
          clearTimeout(confirmTimer);
          confirmTimer = setTimeout(function () { state.confirm = null; renderInstances(); }, 5000);
          renderInstances();
          break;
        }
        act('remove', ref);
        break;
      default:
        act(b.getAttribute('data-act'), ref);
    }
  }

  // ---- wiring ------------------------------------------------------------

  var inst = $('instances');
  if (inst) {
    inst.addEventListener('click', onClick);
    inst.addEventListener('pointerdown', function () { state.pressed = true; });
    document.addEventListener('pointerup', function () {
      state.pressed = false;
      if (state.stale) setTimeout(function () { state.stale = false; renderInstances(); }, 0);
    });
  }

  var search = $('search');
  if (search) {
    var pending = false;
    search.addEventListener('input', function () {
      state.query = search.value;
      if (pending) return;
      pending = true;
      requestAnimationFrame(function () { pending = false; renderInstances(); });
    });
    document.addEventListener('keydown', function (e) {
      if (e.key === '/' && document.activeElement !== search) { e.preventDefault(); search.focus(); }
      if (e.key === 'Escape' && document.activeElement === search) { search.value = ''; state.query = ''; renderInstances(); }
    });
  }

  // Tabs of the last-N page.
  function showTab(name) {
    document.querySelectorAll('.tab').forEach(function (t) { t.classList.toggle('active', t.getAttribute('data-tab') === name); });
    document.querySelectorAll('.tab-pane').forEach(function (p) { p.classList.toggle('active', p.id === name); });
  }
  document.querySelectorAll('.tab').forEach(function (t) {
    t.addEventListener('click', function (e) { e.preventDefault(); showTab(t.getAttribute('data-tab')); });
  });
  if (location.hash === '#cancelled') showTab('cancelled');

  refresh();
})();

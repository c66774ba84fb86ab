// vidfarm console: one page, four views (farm, queue, video, webhooks),
// each drawn from its JSON endpoint's snapshot. Snapshots arrive through
// server-sent events (/console/api/events) while the tab is visible; when
// the stream fails the page polls the endpoint instead.
// Text from the farm (node names, failure messages) only ever goes into
// textContent, never into HTML.
'use strict';
(function () {
  const POLL_MS = 1500;
  const PAGES = ['farm', 'queue', 'video', 'webhooks', 'accounts'];
  let csrf = null;
  let timer = null;
  let source = null; // the page's EventSource while it streams
  let streamFailed = false; // polling instead, until the next page change
  let generation = 0; // a newer refresh makes older answers moot
  let accountsAfter = ''; // the accounts list's page: after this id
  let videoShown = ''; // the video whose facts and graph the video page holds

  const $ = (id) => document.getElementById(id);

  // el builds an element: attrs set attributes (class, href, data-*),
  // children are nodes or strings (as text).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // fill replaces a table's rows; each cell gets its column's heading as
  // data-label, which a narrow screen shows instead of the heading row.
  function fill(tableId, rows, cols, emptyText) {
    const table = $(tableId);
    const heads = [...table.tHead.rows[0].cells].map((th) => th.textContent);
    if (rows.length === 0) rows = [el('tr', { class: 'empty' }, el('td', { colspan: cols }, emptyText))];
    for (const tr of rows) [...tr.cells].forEach((td, i) => td.setAttribute('data-label', heads[i] || ''));
    table.tBodies[0].replaceChildren(...rows);
  }

  function secs(s) {
    s = Math.max(0, Math.round(s));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
    return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
  }
  const ago = (t, now) => (t ? secs((now - Date.parse(t)) / 1000) + ' ago' : '—');
  const until = (t, now) => {
    if (!t) return '—';
    const d = (Date.parse(t) - now) / 1000;
    return d >= 0 ? 'in ' + secs(d) : secs(-d) + ' ago';
  };
  const videoLink = (id) => el('a', { href: '#video/' + encodeURIComponent(id), class: 'mono' }, id);
  const accountLink = (id) => el('a', { href: '#accounts/' + encodeURIComponent(id), class: 'mono' }, id);
  // count is "1 node", "2 nodes".
  const count = (n, one, many) => n + ' ' + (n === 1 ? one : many || one + 's');

  class LoggedOut extends Error {}

  async function api(method, path, body) {
    const opt = { method, headers: {}, credentials: 'same-origin' };
    if (method !== 'GET') opt.headers['X-CSRF-Token'] = csrf || '';
    if (body !== undefined) {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    const r = await fetch(path, opt);
    if (r.status === 401 && path !== '/console/login') {
      showLogin('');
      throw new LoggedOut('logged out');
    }
    const text = await r.text();
    const data = text ? JSON.parse(text) : null;
    if (!r.ok) {
      const e = data && data.error;
      throw new Error(e ? e.message : 'HTTP ' + r.status);
    }
    return data;
  }

  // ---- login and session ----

  function showLogin(msg) {
    csrf = null;
    clearTimeout(timer);
    closeStream();
    $('nav').hidden = true;
    for (const p of PAGES) $(p + '-page').hidden = true;
    $('login-page').hidden = false;
    $('login-error').textContent = msg;
    $('updated').textContent = '';
    $('error').textContent = '';
    $('token').focus();
  }

  async function login(ev) {
    ev.preventDefault();
    try {
      const s = await api('POST', '/console/login', { token: $('token').value });
      $('token').value = '';
      csrf = s.csrf_token;
      start();
    } catch (e) {
      $('login-error').textContent = e.message;
    }
  }

  async function logout() {
    try {
      await api('POST', '/console/logout');
    } catch (e) {
      if (!(e instanceof LoggedOut)) $('error').textContent = e.message;
    }
    showLogin('Logged out.');
  }

  function start() {
    $('login-page').hidden = true;
    $('nav').hidden = false;
    route();
  }

  // ---- routing and polling ----

  function current() {
    const [page, arg] = location.hash.replace(/^#/, '').split('/');
    return { page: PAGES.includes(page) ? page : 'farm', arg: arg ? decodeURIComponent(arg) : '' };
  }

  function route() {
    if (!csrf) return;
    const { page, arg } = current();
    for (const p of PAGES) $(p + '-page').hidden = p !== page;
    for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', a.dataset.page === page);
    if (page === 'video') {
      $('video-id').value = arg;
      // Another video's facts must not stay up while this one loads, nor
      // beside the error if there is no such video.
      if (arg !== videoShown) {
        $('video-head').replaceChildren();
        $('graph').replaceChildren();
        videoShown = '';
      }
    }
    streamFailed = false;
    refresh();
  }

  // query is what the current page asks its endpoint for.
  function query() {
    const { page, arg } = current();
    if (page === 'farm') {
      const q = $('node-filter').value.trim();
      return { path: '/console/api/farm', params: q ? { q } : {} };
    }
    if (page === 'video') return arg ? { path: '/console/api/videos/' + encodeURIComponent(arg), params: { id: arg } } : null;
    if (page === 'accounts' && arg) return { stream: 'account', path: '/console/api/accounts/' + encodeURIComponent(arg), params: { id: arg } };
    if (page === 'accounts') {
      const params = {};
      const q = $('account-filter').value.trim();
      if (q) params.q = q;
      if (accountsAfter) params.after = accountsAfter;
      return { path: '/console/api/accounts', params };
    }
    return { path: '/console/api/' + page, params: {} };
  }

  function drawn(gen, how) {
    if (gen !== generation) return;
    $('updated').textContent = 'Updated ' + new Date().toLocaleTimeString() + (how === 'live' ? ' · live' : ' · polling');
    $('updated').dataset.live = how;
    $('error').textContent = '';
  }

  function closeStream() {
    if (source) source.close();
    source = null;
  }

  // refresh shows the current page: it follows the page's stream, or polls
  // when the stream failed (an old proxy, a member without it).
  function refresh() {
    clearTimeout(timer);
    closeStream();
    const gen = ++generation;
    const { page, arg } = current();
    const q = query();
    if (document.hidden) return; // visibilitychange starts it again
    if (!q) {
      DRAW[page](null, arg);
      return;
    }
    if (!streamFailed && window.EventSource) {
      const es = new EventSource('/console/api/events?' + new URLSearchParams({ page: q.stream || page, ...q.params }));
      source = es;
      es.addEventListener('snapshot', (ev) => {
        if (gen !== generation) return;
        DRAW[page](JSON.parse(ev.data), arg);
        drawn(gen, 'live');
      });
      es.addEventListener('failure', (ev) => {
        if (gen === generation) $('error').textContent = '⚠ ' + JSON.parse(ev.data).message;
      });
      es.addEventListener('end', () => { closeStream(); poll(gen); }); // the poll meets the 401
      es.onerror = () => {
        // EventSource reconnects by itself after a dropped connection; a
        // refused one (401, 404, not a stream) is CLOSED: poll instead.
        if (gen !== generation || es.readyState !== EventSource.CLOSED) return;
        closeStream();
        streamFailed = true;
        poll(gen);
      };
      return;
    }
    poll(gen);
  }

  async function poll(gen) {
    const { page, arg } = current();
    const q = query();
    if (gen !== generation || !q) return;
    try {
      const params = q.params.id ? '' : new URLSearchParams(q.params).toString();
      const data = await api('GET', q.path + (params ? '?' + params : ''));
      if (gen !== generation) return;
      DRAW[page](data, arg);
      drawn(gen, 'polling');
    } catch (e) {
      if (e instanceof LoggedOut) return;
      if (gen === generation) $('error').textContent = '⚠ ' + e.message;
    }
    if (gen === generation && csrf && !document.hidden) timer = setTimeout(() => poll(gen), POLL_MS);
  }

  // ---- farm ----

  const STATE_LABEL = {
    active: '● active', cordoned: '◐ cordoned', draining: '◌ draining', drained: '○ drained', down: '✕ down',
  };

  function nodeState(n) {
    const parts = [el('span', { class: 'state state-' + n.state }, STATE_LABEL[n.state] || n.state)];
    if (n.down) parts.push(' ', el('span', { class: 'state state-down' }, STATE_LABEL.down));
    if (n.agent_draining) parts.push(' ', el('span', { class: 'muted' }, '(agent stopping)'));
    // The agent leases nothing of its own accord (its work dir over its
    // limit): the node looks live and idle otherwise.
    if (n.paused) parts.push(' ', el('span', { class: 'muted', 'data-paused': '', title: n.paused }, '(paused: ' + n.paused + ')'));
    return parts;
  }

  // HOT_C is the die temperature the page flags (data-centre GPUs slow
  // down from about 85 °C).
  const HOT_C = 85;

  function gpuChips(n, now) {
    if (n.gpus.length === 0) return el('span', { class: 'muted' }, 'CPU only');
    const stale = n.telemetry_stale ? el('div', { class: 'warn telemetry-stale' },
      '⚠ readings ' + ago(n.telemetry_at, now) + ': the agent stopped sending them') : null;
    return n.gpus.map((g) => el('span', { class: 'gpu' + (g.busy ? ' busy' : ''), title: g.id, 'data-gpu': g.id },
      g.model && g.model !== 'virtual' ? el('div', { class: 'muted' }, g.model) : null,
      (g.mig ? 'MIG ' : '') + g.id + ': ' + g.memory_total_gb + ' GB, ' + g.memory_free_gb + ' GB free at start — ' + (g.busy ? '■ busy' : '□ idle'),
      gpuReadings(g), g.memory_used_gb != null ? stale : null));
  }

  // gpuReadings is a GPU's last NVML readings from the agent's heartbeat:
  // memory used of total as a bar and in words, utilisation, temperature
  // (flagged in words and a symbol when hot), power.
  function gpuReadings(g) {
    if (g.memory_used_gb == null) return null;
    const usedPct = g.memory_total_gb > 0 ? 100 * g.memory_used_gb / g.memory_total_gb : 0;
    const parts = [];
    if (g.utilization_percent != null) parts.push(Math.round(g.utilization_percent) + '% busy');
    if (g.temperature_c != null) {
      const hot = g.temperature_c >= HOT_C;
      parts.push(el('span', { class: hot ? 'bad' : null }, Math.round(g.temperature_c) + ' °C' + (hot ? ' ▲ hot' : '')));
    }
    if (g.power_w != null) parts.push(Math.round(g.power_w) + ' W');
    return el('div', { class: 'telemetry' },
      el('span', { class: 'bar', role: 'meter', 'aria-label': 'memory used', 'aria-valuenow': Math.round(usedPct), 'aria-valuemin': 0, 'aria-valuemax': 100 },
        el('span', {})), ' ', g.memory_used_gb.toFixed(1) + ' of ' + g.memory_total_gb + ' GB used',
      parts.map((p) => [' · ', p]));
  }

  function runningTasks(n, now) {
    if (n.running_tasks.length === 0) return el('span', { class: 'muted' }, 'none');
    return el('ul', {}, n.running_tasks.map((t) => el('li', { 'data-task': t.task_id },
      videoLink(t.video_id), ' ', t.task || t.kind, t.model ? ' (' + t.model + ')' : '', ' ',
      el('span', { class: 'bar', role: 'progressbar', 'aria-valuenow': Math.round(t.percent), 'aria-valuemin': 0, 'aria-valuemax': 100 },
        el('span', { style: null })), ' ', Math.round(t.percent) + '%',
      ' · attempt ' + t.attempt + ' · lease ' + until(t.lease_deadline, now))));
  }

  function maintenance(n) {
    const cell = [];
    if (n.maintenance_reason) cell.push(el('div', {}, '“' + n.maintenance_reason + '”'));
    if (n.drain_deadline && n.state === 'draining') cell.push(el('div', { class: 'muted' }, 'hand back ' + until(n.drain_deadline, Date.now())));
    const buttons = [];
    if (n.state === 'active') buttons.push('cordon');
    buttons.push('drain');
    if (n.state !== 'active') buttons.push('uncordon');
    cell.push(el('div', {}, buttons.map((a) => el('button', { type: 'button', 'data-action': a, 'data-node': n.id }, a[0].toUpperCase() + a.slice(1)))));
    return cell;
  }

  function bridge(appdb) {
    if (!appdb || !appdb.enabled) return el('span', { class: 'muted' }, 'none');
    const lag = 'lag in ' + secs(appdb.inbound_lag_seconds || 0) + ', out ' + secs(appdb.outbound_lag_seconds || 0) +
      ', ' + (appdb.outbound_pending || 0) + ' pending';
    return el('span', { class: appdb.connected ? '' : 'bad' }, (appdb.active ? 'running, ' : 'standby, ') +
      (appdb.connected ? 'connected, ' : '✕ not connected, ') + lag, appdb.last_error ? ' — ' + appdb.last_error : '');
  }

  function drawFarm(f) {
    const q = $('node-filter').value.trim();
    const now = Date.parse(f.generated_at);
    const s = f.summary;
    const counts = Object.entries(s.nodes).map(([k, v]) => v + ' ' + k).join(', ');
    $('farm-summary').textContent = count(f.nodes.length, 'node') + (counts ? ' (' + counts + ')' : '') + ' · ' +
      count(s.gpus, 'GPU') + ', ' + s.busy_gpus + ' busy · ' + count(s.running_tasks, 'task') + ' running · served by ' +
      (f.self.node_id || '?') + ' (' + f.self.state + ')';
    $('farm-telemetry').hidden = !f.telemetry_on_leader;
    $('farm-telemetry').textContent = f.telemetry_on_leader ? 'GPU readings (memory used, utilisation, temperature): telemetry on the leader' +
      (f.self.leader_id ? ', ' + f.self.leader_id + ': open its console to see them.' : '.') : '';
    $('nodes-shown').textContent = f.nodes.length < f.matched ? 'showing ' + f.nodes.length + ' of ' + f.matched + ' (those needing attention first); narrow with Find' :
      (q ? f.matched + ' match' : '');
    fill('nodes', f.nodes.map((n) => el('tr', { 'data-node': n.name || n.id, 'data-state': n.state },
      el('td', {}, el('strong', {}, n.name || n.id), el('div', { class: 'muted mono' }, n.id), n.virtual ? el('div', { class: 'muted' }, 'virtual (CPU render slots)') : null),
      el('td', { class: 'node-state' }, nodeState(n)),
      el('td', {}, ago(n.last_heartbeat, now)),
      el('td', {}, gpuChips(n, now)),
      el('td', {}, n.free_cpu_slots + ' free of ' + n.cpu_slots),
      el('td', {}, n.models + ' runnable', el('div', { class: 'muted' }, n.warm_models.length ? 'warm: ' + n.warm_models.join(', ') : 'none warm')),
      el('td', { class: 'running' }, runningTasks(n, now)),
      el('td', {}, maintenance(n)))), 8, 'No render node has registered. Start one with `vidfarm agent`.');
    for (const bar of document.querySelectorAll('#nodes .bar')) {
      bar.firstChild.style.width = Math.min(100, Number(bar.getAttribute('aria-valuenow'))) + '%';
    }
    const members = f.cluster ? f.cluster.nodes : [];
    fill('members', members.map((m) => {
      const st = m.status;
      if (!st) return el('tr', { 'data-member': m.id }, el('td', {}, m.id), el('td', { colspan: 6, class: 'bad' }, '✕ ' + m.error));
      return el('tr', { 'data-member': m.id },
        el('td', {}, m.id, m.id === f.self.node_id ? ' (this page)' : ''),
        el('td', { class: 'state' }, (st.state === 'leader' ? '★ ' : '') + st.state,
          st.last_contact_ms != null ? el('div', { class: 'muted' }, 'leader heard ' + Math.round(st.last_contact_ms) + ' ms ago') : null),
        el('td', {}, st.leader_id || '—'),
        el('td', {}, st.term),
        el('td', {}, st.commit_index),
        el('td', {}, st.applied_index, st.commit_index > st.applied_index ? el('span', { class: 'warn' }, ' (' + (st.commit_index - st.applied_index) + ' behind)') : null),
        el('td', {}, bridge(st.app_db)));
    }), 7, f.cluster_error ? 'Members unknown: ' + f.cluster_error : 'No members.');
  }

  async function maintain(ev) {
    const b = ev.target.closest('button[data-action]');
    if (!b) return;
    const action = b.dataset.action;
    const body = { reason: $('reason').value };
    if (action === 'drain') body.timeout_seconds = Number($('drain-timeout').value);
    try {
      const n = await api('POST', '/console/api/nodes/' + encodeURIComponent(b.dataset.node) + '/' + action, action === 'uncordon' ? undefined : body);
      $('action-result').textContent = (n.name || n.id) + ': ' + n.state;
    } catch (e) {
      if (!(e instanceof LoggedOut)) $('action-result').textContent = '⚠ ' + action + ' failed: ' + e.message;
    }
    refresh();
  }

  // ---- queue ----

  function drawQueue(q) {
    const now = Date.parse(q.generated_at);
    $('queue-summary').textContent = count(q.queue.unfinished_videos, 'video') + ' unfinished · ' + count(q.queue.ready_tasks, 'task') + ' ready for a node' +
      (q.queue.has_more ? ' · the oldest ' + q.queue.waiting.length + ' waiting videos listed' : '');
    fill('classes', q.classes.map((c) => el('tr', {}, el('td', {}, c.kind), el('td', {}, c.model || '—'), el('td', {}, c.tasks), el('td', {}, secs(c.oldest_seconds)))),
      4, 'Nothing waits for a node.');
    fill('waiting', q.queue.waiting.map((v) => el('tr', { 'data-video': v.video_id },
      el('td', {}, v.queue_position || '—'), el('td', {}, videoLink(v.video_id)), el('td', {}, accountLink(v.account_id)),
      el('td', {}, v.model || v.mode), el('td', {}, !v.task ? '—' : v.task === v.kind ? v.task : v.task + ' (' + v.kind + ')'),
      el('td', { class: 'reason' }, el('strong', {}, v.reason), el('div', {}, v.message)),
      el('td', {}, ago(v.waiting_since || v.created_at, now)))), 7, 'No video waits.');
    fill('expiring', q.expiring_leases.map((l) => el('tr', {}, el('td', {}, l.node), el('td', {}, videoLink(l.video_id)),
      el('td', {}, l.task || l.kind), el('td', {}, l.attempt), el('td', { class: 'bad' }, l.remaining_seconds >= 0 ? secs(l.remaining_seconds) : 'expired'))),
      5, 'No lease is near its deadline.');
    fill('overdue', q.overdue.map((o) => el('tr', { 'data-video': o.video_id }, el('td', {}, o.node), el('td', {}, videoLink(o.video_id)),
      el('td', {}, o.kind + (o.model ? ' (' + o.model + ')' : '')), el('td', {}, o.attempt), el('td', { class: 'bad' }, secs(o.running_seconds)),
      el('td', {}, secs(o.p99_seconds) + ' of ' + o.samples + ' done'))), 6, 'No running task is past its class\'s p99.');
    fill('retrying', q.retrying.map((v) => el('tr', {}, el('td', {}, videoLink(v.video_id)), el('td', {}, v.task || '—'),
      el('td', {}, v.failures), el('td', {}, until(v.retry_at, now)), el('td', { class: 'bad' }, v.last_failure || '—'))),
      5, 'No task is retrying.');
  }

  // ---- video ----

  // levels orders the graph's tasks in columns: a task one column right of
  // its deepest dependency.
  function levels(tasks) {
    const byName = new Map(tasks.map((t) => [t.name, t]));
    const depth = new Map();
    const d = (t, seen) => {
      if (depth.has(t.name)) return depth.get(t.name);
      if (seen.has(t.name)) return 0;
      seen.add(t.name);
      const v = Math.max(-1, ...(t.deps || []).map((n) => (byName.has(n) ? d(byName.get(n), seen) : -1))) + 1;
      depth.set(t.name, v);
      return v;
    };
    const cols = [];
    for (const t of tasks) (cols[d(t, new Set())] ||= []).push(t);
    return cols;
  }

  // took gives each done task the first unused timing of its kind and model
  // (timings carry no task name; tasks of one kind and model are alike).
  function took(tasks, timings) {
    const left = [...timings];
    const out = new Map();
    for (const t of tasks.filter((x) => x.state === 'done')) {
      const i = left.findIndex((x) => x.kind === t.kind && (x.model || '') === (t.model || ''));
      if (i >= 0) out.set(t.name, left.splice(i, 1)[0]);
    }
    return out;
  }

  const timingText = (x) => secs(x.seconds) + (x.gpu ? ' on ' + x.gpu : x.model ? '' : ' on CPU');

  function timingBox(x, i) {
    return el('div', { class: 'task state-done', 'data-timing': i },
      el('h4', {}, x.kind), el('dl', {}, [['model', x.model || '—'], ['GPU', x.gpu || 'none (CPU)'], ['took', secs(x.seconds)]]
        .map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])));
  }

  function taskBox(t, now, names, timing) {
    const name = (id) => names[id] || id;
    const rows = [['state', t.state], ['kind', t.kind + (t.model ? ' · ' + t.model : '') + (t.gpus ? ' · ' + t.gpus + ' GPU' : '')]];
    if (t.deps && t.deps.length) rows.push(['after', t.deps.join(', ')]);
    rows.push(['attempts', t.attempts + (t.failures ? ' (' + t.failures + ' failed)' : '')]);
    if (t.node) rows.push(['node', name(t.node)], ['leased', ago(t.leased_at, now)], ['lease ends', until(t.lease_deadline, now)], ['progress', Math.round(t.percent) + '%']);
    if (t.done_node) rows.push(['done by', name(t.done_node)]);
    if (timing) rows.push(['took', timingText(timing)]);
    if (t.ready_since) rows.push(['ready', ago(t.ready_since, now)]);
    if (t.retry_at) rows.push(['next try', until(t.retry_at, now)]);
    if (t.failed_nodes && t.failed_nodes.length) rows.push(['failed on', t.failed_nodes.map(name).join(', ')]);
    if (t.last_failure) rows.push(['failure', t.last_failure]);
    return el('div', { class: 'task state-' + t.state, 'data-task': t.name, 'data-state': t.state },
      el('h4', {}, t.name), el('dl', {}, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])));
  }

  function drawVideo(v, id) {
    videoShown = id;
    if (!id) {
      $('video-head').replaceChildren(el('p', { class: 'hint' }, 'Give a video id, or open one from the farm or queue page.'));
      $('graph').replaceChildren();
      return;
    }
    const now = Date.now();
    const facts = [['status', v.status], ['account', accountLink(v.account_id)], ['mode', v.mode + (v.model ? ' · ' + v.model : '')]];
    // The state does not keep where a failed or canceled video stopped:
    // its percent (0) would say it never began.
    if (v.status !== 'failed' && v.status !== 'canceled') facts.push(['progress', v.percent + '%']);
    // A cancel refunds only what was not rendered: say how much came back.
    facts.push(['created', ago(v.created_at, now)],
      ['credits', 'charged ' + v.credits_charged + (v.credits_refunded ? ', refunded ' + v.refunded_credits : '')]);
    if (v.started_at) facts.push(['started', ago(v.started_at, now)]);
    if (v.finished_at) facts.push(['finished', ago(v.finished_at, now)]);
    if (v.reason) facts.push(['waits', v.reason + ': ' + v.message]);
    if (v.queue_position) facts.push(['queue position', v.queue_position]);
    if (v.error) facts.push(['error', v.error]);
    $('video-head').replaceChildren(el('h3', { class: 'mono', id: 'video-title', 'data-status': v.status }, v.video_id),
      el('dl', { class: 'facts' }, facts.map(([k, val]) => el('div', {}, el('dt', {}, k), el('dd', {}, val)))));
    if (v.tasks.length === 0) {
      const hint = el('p', { class: 'hint' }, 'The scheduler keeps a video\'s task graph only until it finishes; ' +
        (v.timings.length ? 'its tasks, in the order they finished, with how long each took:' : 'the facts above are what remains.'));
      $('graph').replaceChildren(hint, ...v.timings.map((x, i) => [i ? el('div', { class: 'arrow', 'aria-hidden': 'true' }, '→') : null, timingBox(x, i)]).flat().filter(Boolean));
      return;
    }
    const timed = took(v.tasks, v.timings);
    const cols = levels(v.tasks).map((col) => el('div', { class: 'level' }, col.map((t) => taskBox(t, now, v.node_names, timed.get(t.name)))));
    $('graph').replaceChildren(...cols.flatMap((c, i) => (i ? [el('div', { class: 'arrow', 'aria-hidden': 'true' }, '→'), c] : [c])));
  }

  // ---- webhooks ----

  function deliveryRow(d, now, last) {
    const a = d.attempts[d.attempts.length - 1];
    const lastAttempt = a ? [ago(a.at, now), ' — ', a.status ? 'HTTP ' + a.status : 'no answer', a.error ? ': ' + a.error : ''] : ['—'];
    return el('tr', {}, el('td', { class: 'mono' }, d.account_id), el('td', { class: 'mono' }, d.url),
      el('td', { class: 'mono' }, d.event_id), el('td', {}, d.attempts.length), el('td', { class: 'bad' }, lastAttempt), el('td', {}, last(d)));
  }

  function drawWebhooks(w) {
    const now = Date.parse(w.generated_at);
    $('wh-endpoints-shown').textContent = w.endpoints.length < w.endpoints_total ? 'the latest ' + w.endpoints.length + ' of ' + w.endpoints_total : '';
    fill('wh-endpoints', w.endpoints.map((e) => el('tr', { 'data-webhook': e.id, 'data-status': e.status },
      el('td', {}, accountLink(e.account_id)), el('td', { class: 'mono' }, e.url, el('div', { class: 'muted' }, e.id)),
      el('td', { class: e.status === 'disabled' ? 'bad' : 'warn' }, e.status === 'disabled' ? '✕ disabled ' + ago(e.disabled_at, now) : '⚠ failing'),
      el('td', {}, ago(e.failing_since, now)), el('td', {}, ago(e.last_failed_at, now)),
      el('td', {}, el('ul', {}, e.recent.map((d) => el('li', {}, el('span', { class: 'mono' }, d.event_type || d.event_id), ' ', d.state,
        ' · ' + d.attempts + ' attempt' + (d.attempts === 1 ? '' : 's'),
        d.last_attempt ? [' · ', ago(d.last_attempt.at, now), ': ', d.last_attempt.status ? 'HTTP ' + d.last_attempt.status : 'no answer',
          d.last_attempt.error ? ' — ' + d.last_attempt.error : ''] : '')))))),
    6, 'Every endpoint\'s last attempt succeeded.');
    fill('wh-retrying', w.retrying.map((d) => deliveryRow(d, now, (x) => until(x.next_attempt_at, now))), 6, 'No delivery is retrying.');
    fill('wh-abandoned', w.abandoned.map((d) => deliveryRow(d, now, (x) => ago(x.finished_at, now))), 6, 'No delivery was abandoned.');
  }

  // ---- accounts ----

  function drawAccounts(a, id) {
    $('accounts-list').hidden = !!id;
    $('account-detail').hidden = !id;
    if (id) {
      drawAccount(a);
      return;
    }
    const now = Date.parse(a.generated_at);
    $('accounts-shown').textContent = a.matched + ' accounts' + (accountsAfter ? ', after ' + accountsAfter : '');
    $('accounts-first').hidden = !accountsAfter;
    const next = $('accounts-next');
    next.hidden = !a.has_more;
    next.dataset.after = a.accounts.length ? a.accounts[a.accounts.length - 1].id : '';
    fill('accounts', a.accounts.map((x) => el('tr', { 'data-account': x.id },
      el('td', {}, accountLink(x.id)), el('td', {}, x.name), el('td', {}, x.plan), el('td', {}, x.balance),
      el('td', {}, ago(x.created_at, now)), el('td', { class: x.rate_limit_hits ? 'warn' : '' }, x.rate_limit_hits))),
    6, 'No account matches.');
  }

  function drawAccount(a) {
    const x = a.account;
    const hits = a.rate_limit_hits;
    const byClass = Object.entries(hits.by_class).map(([k, v]) => k + ' ' + v).join(', ');
    const facts = [['name', x.name], ['plan', x.plan], ['balance', x.balance + ' credits'], ['created', ago(x.created_at, Date.parse(a.generated_at))],
      ['rate-limit hits', hits.total ? hits.total + ' (' + byClass + '), last ' + ago(hits.last, Date.parse(a.generated_at)) + ' — on this member since it started' : 'none on this member since it started']];
    $('account-head').replaceChildren(el('h3', { class: 'mono', id: 'account-title' }, x.id),
      el('dl', { class: 'facts' }, facts.map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', {}, v)))));
    const statuses = Object.entries(a.videos);
    fill('account-videos', statuses.map(([st, n]) => el('tr', { 'data-status': st }, el('td', {}, st), el('td', {}, n))), 2, 'No video.');
    const most = Math.max(1, ...a.spent_per_day.map((d) => d.credits));
    fill('account-spend', a.spent_per_day.map((d) => el('tr', { 'data-day': d.day }, el('td', {}, d.day), el('td', {}, d.credits),
      el('td', {}, el('span', { class: 'bar', role: 'img', 'aria-label': d.credits + ' credits', 'data-width': Math.round(100 * Math.max(0, d.credits) / most) }, el('span', {}))))),
    3, 'No day.');
    for (const bar of document.querySelectorAll('#account-spend .bar')) bar.firstChild.style.width = bar.dataset.width + '%';
    $('account-spend-note').textContent = a.spent_complete ? '' : 'The account made more videos in these days than the page reads: only the newest are counted.';
  }

  const DRAW = { farm: drawFarm, queue: drawQueue, video: drawVideo, webhooks: drawWebhooks, accounts: drawAccounts };

  // ---- start ----

  document.addEventListener('DOMContentLoaded', async () => {
    $('login').addEventListener('submit', login);
    $('logout').addEventListener('click', logout);
    $('nodes').addEventListener('click', maintain);
    $('node-filter').addEventListener('input', () => refresh());
    $('account-filter').addEventListener('input', () => { accountsAfter = ''; refresh(); });
    $('accounts-next').addEventListener('click', (ev) => { accountsAfter = ev.target.dataset.after; refresh(); });
    $('accounts-first').addEventListener('click', () => { accountsAfter = ''; refresh(); });
    $('video-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      location.hash = '#video/' + encodeURIComponent($('video-id').value.trim());
    });
    window.addEventListener('hashchange', route);
    document.addEventListener('visibilitychange', () => {
      if (!csrf) return;
      if (document.hidden) { // a hidden tab holds no stream and polls nothing
        ++generation;
        clearTimeout(timer);
        closeStream();
      } else refresh();
    });
    try {
      const s = await api('GET', '/console/api/session');
      csrf = s.csrf_token;
      start();
    } catch (e) {
      if (!(e instanceof LoggedOut)) showLogin(e.message);
    }
  });
})();

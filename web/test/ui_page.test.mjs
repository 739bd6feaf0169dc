// SPDX-License-Identifier: MIT
// The explorer page in Debian's Chromium (playwright-core drives
// /usr/bin/chromium; nothing is downloaded), against a running
// cgperf-exporter that tests/integration/ui_page.sh started and fed.
//   CGPERF_UI_URL     the exporter, http://127.0.0.1:PORT
//   CGPERF_UI_HOST    a host with stacks (gen_batch pushes)
//   CGPERF_UI_FUNC    a regular expression naming a function of its stacks
//   CGPERF_UI_EVIL    a host name that is HTML markup
//   CGPERF_UI_SHOTS   where screenshots go
//   CHROMIUM          the browser (default /usr/bin/chromium)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';

const BASE = process.env.CGPERF_UI_URL;
const HOST = process.env.CGPERF_UI_HOST || 'web-1';
const FUNC = process.env.CGPERF_UI_FUNC || '^hash_';
const EVIL = process.env.CGPERF_UI_EVIL || '<img src=x onerror=window.__pwned=1>';
const SHOTS = process.env.CGPERF_UI_SHOTS || 'ui-shots';
assert.ok(BASE, 'CGPERF_UI_URL is not set');
mkdirSync(SHOTS, { recursive: true });

let browser, page;
const problems = []; // console errors, page errors, dialogs

before(async () => {
	browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking'],
	});
	const ctx = await browser.newContext({ viewport: { width: 1400, height: 860 } });
	// No network but the exporter: anything else is refused and reported.
	await ctx.route('**/*', (r) => (r.request().url().startsWith(BASE) ? r.continue() : (problems.push('request to ' + r.request().url()), r.abort())));
	page = await ctx.newPage();
	page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
	page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
	page.on('dialog', (d) => (problems.push(`dialog: ${d.message()}`), d.dismiss()));
});

after(async () => {
	await browser?.close();
});

function clean() {
	assert.deepEqual(problems.splice(0), [], 'the page logged errors');
}

async function flameReady() {
	await page.waitForFunction(() => Number(document.getElementById('flame')?.dataset.frames) > 0, null, { timeout: 20000 });
}

// Folded stacks from the API, parsed here independently of the page.
async function foldedShare(q, re) {
	const r = await fetch(`${BASE}/api/v1/stacks?${q}&format=folded`);
	assert.equal(r.status, 200);
	let all = 0, hit = 0;
	for (const line of (await r.text()).split('\n')) {
		const sp = line.lastIndexOf(' ');
		if (sp < 0) continue;
		const n = Number(line.slice(sp + 1));
		all += n;
		if (line.slice(0, sp).split(';').some((f) => re.test(f))) hit += n;
	}
	return { all, share: hit / all };
}

test('the page loads with its CSP and no console error', async () => {
	const resp = await page.goto(`${BASE}/?host=${encodeURIComponent(HOST)}`);
	assert.equal(resp.status(), 200);
	const csp = resp.headers()['content-security-policy'] || '';
	assert.match(csp, /script-src 'self'/);
	assert.match(csp, /default-src 'none'/);
	assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
	for (const a of ['app.js', 'uPlot.esm.js', 'style.css']) {
		const r = await fetch(`${BASE}/ui/${a}`, { headers: { 'Accept-Encoding': 'gzip' } });
		assert.equal(r.status, 200, a);
		assert.ok(r.headers.get('etag'), `${a}: no ETag`);
		const again = await fetch(`${BASE}/ui/${a}`, { headers: { 'If-None-Match': r.headers.get('etag') } });
		assert.equal(again.status, 304, `${a}: If-None-Match not honoured`);
	}
	await flameReady();
	await page.screenshot({ path: `${SHOTS}/flame.png` });
	clean();
});

test('the flame graph canvas is drawn', async () => {
	const px = await page.evaluate(() => {
		const c = document.getElementById('flame');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let painted = 0;
		const colours = new Set();
		for (let i = 0; i < d.length; i += 4 * 7) {
			if (d[i + 3] > 0) {
				painted++;
				colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
			}
		}
		return { painted, colours: colours.size, w: c.width, h: c.height };
	});
	assert.ok(px.w > 300 && px.h > 50, `canvas ${px.w}x${px.h}`);
	assert.ok(px.painted > 2000, `only ${px.painted} pixels painted`);
	assert.ok(px.colours > 10, `only ${px.colours} colours`);
	clean();
});

test('search highlights matches and reports their share as the folded API has it', async () => {
	const re = new RegExp(FUNC);
	const want = await foldedShare(`host=${encodeURIComponent(HOST)}`, re);
	assert.ok(want.share > 0 && want.share < 1, `pick a function in some stacks (share ${want.share})`);
	await page.fill('#search', FUNC);
	await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
	const shown = await page.$eval('#matched', (e) => e.textContent);
	const pctShown = Number(/Matched: ([0-9.]+)%/.exec(shown)[1]);
	assert.ok(Math.abs(pctShown - want.share * 100) <= 0.5, `page says ${shown}, folded API ${(want.share * 100).toFixed(2)}%`);
	await page.waitForFunction((f) => new URLSearchParams(location.search).get('search') === f, FUNC);
	await page.screenshot({ path: `${SHOTS}/search.png` });
	clean();
});

test('click zooms, the breadcrumb zooms out, Escape resets', async () => {
	await page.goto(`${BASE}/?host=${encodeURIComponent(HOST)}&view=icicle`);
	await flameReady();
	const box = await page.$eval('#flame', (c) => { const b = c.getBoundingClientRect(); return { x: b.left, y: b.top }; });
	// icicle: depth 3 is the 4th row from the top; the left-most frame there
	await page.mouse.click(box.x + 5, box.y + 3 * 18 + 9);
	await page.waitForFunction(() => new URLSearchParams(location.search).has('zoom'));
	const zoom = await page.evaluate(() => new URLSearchParams(location.search).get('zoom'));
	assert.equal(zoom.split(';').length, 3, `zoom=${zoom}`);
	const crumbs = await page.$$eval('.crumbs .crumb', (cs) => cs.map((c) => c.textContent));
	assert.deepEqual(crumbs, ['all', ...zoom.split(';')]);
	await page.screenshot({ path: `${SHOTS}/zoom.png` });
	await page.click('.crumbs a.crumb >> nth=1'); // the first frame under all
	await page.waitForFunction(() => new URLSearchParams(location.search).get('zoom')?.split(';').length === 1);
	await page.keyboard.press('Escape');
	await page.waitForFunction(() => !new URLSearchParams(location.search).has('zoom'));
	clean();
});

test('the URL reproduces the view after a reload, and back/forward walk it', async () => {
	const q = new URLSearchParams({ host: HOST, view: 'icicle', search: FUNC, from: '-6h' });
	await page.goto(`${BASE}/?${q}`);
	await flameReady();
	await page.mouse.click(...(await page.$eval('#flame', (c) => { const b = c.getBoundingClientRect(); return [b.left + 5, b.top + 2 * 18 + 9]; })));
	await page.waitForFunction(() => new URLSearchParams(location.search).has('zoom'));
	const before = await page.evaluate(() => location.search);
	await page.reload();
	await flameReady();
	const seen = await page.evaluate(() => ({
		search: location.search,
		input: document.getElementById('search').value,
		tab: document.querySelector('.views [aria-selected="true"]').dataset.view,
		crumb: document.querySelector('.crumbs .current').textContent,
		preset: document.querySelector('.presets .on')?.dataset.from,
		chip: document.getElementById('selection').textContent,
	}));
	assert.equal(seen.search, before);
	assert.equal(seen.input, FUNC);
	assert.equal(seen.tab, 'icicle');
	assert.equal(seen.crumb, new URLSearchParams(before).get('zoom').split(';').pop());
	assert.equal(seen.preset, '-6h');
	assert.ok(seen.chip.includes(HOST));
	await page.click('.views [data-view="series"]');
	await page.waitForSelector('.uplot');
	await page.goBack();
	await flameReady();
	assert.equal(await page.evaluate(() => location.search), before);
	assert.equal(await page.$eval('.views [aria-selected="true"]', (b) => b.dataset.view), 'icicle');
	await page.goForward();
	await page.waitForSelector('.uplot');
	clean();
});

test('the series view plots the top cgroups and a drag sets from/to', async () => {
	await page.goto(`${BASE}/?view=series&host=${encodeURIComponent(HOST)}`);
	await page.waitForSelector('.uplot .u-over');
	const labels = await page.$$eval('.u-legend .u-series .u-label', (ls) => ls.map((l) => l.textContent).filter(Boolean));
	assert.ok(labels.length >= 2, `legend: ${labels}`);
	await page.screenshot({ path: `${SHOTS}/series.png` });
	const o = await page.$eval('.uplot .u-over', (e) => { const b = e.getBoundingClientRect(); return { x: b.left, y: b.top, w: b.width, h: b.height }; });
	await page.mouse.move(o.x + o.w * 0.5, o.y + o.h / 2);
	await page.mouse.down();
	await page.mouse.move(o.x + o.w * 0.7, o.y + o.h / 2, { steps: 8 });
	await page.mouse.up();
	await page.waitForFunction(() => /^\d+$/.test(new URLSearchParams(location.search).get('from') || ''));
	const { from, to } = await page.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));
	assert.ok(Number(from) < Number(to), `from=${from} to=${to}`);
	assert.ok(Number(to) - Number(from) < 3600, 'a drag over a fifth of an hour gives less than an hour');
	clean();
});

test('hostile names render as text, never as markup', async () => {
	await page.goto(`${BASE}/`);
	await page.waitForSelector('#target-list .row');
	const rows = await page.$$eval('#target-list .row .t', (ts) => ts.map((t) => t.textContent));
	assert.ok(rows.includes(EVIL), `hosts: ${JSON.stringify(rows)}`);
	await page.click('.tabs [data-tab="cgroups"]');
	const cgs = await page.$$eval('#target-list .row .t', (ts) => ts.map((t) => t.textContent));
	assert.ok(cgs.includes('/q"uote') && cgs.includes('/new\nline'), `cgroups: ${JSON.stringify(cgs)}`);
	// the hostile host's flame graph, with its hostile frames as text
	await page.goto(`${BASE}/?view=icicle&host=${encodeURIComponent('h"o\\st')}&search=${encodeURIComponent('^/')}`);
	await flameReady();
	await page.goto(`${BASE}/?view=icicle&host=${encodeURIComponent(EVIL)}`);
	await flameReady();
	const b = await page.$eval('#flame', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top }; });
	await page.mouse.move(b.x + 20, b.y + 9);
	await page.waitForSelector('.tooltip:not([hidden])');
	const chip = await page.$eval('#selection', (e) => e.textContent);
	assert.ok(chip.includes(EVIL), chip);
	await page.screenshot({ path: `${SHOTS}/hostile.png` });
	const pwned = await page.evaluate(() => ({ flag: window.__pwned, imgs: document.querySelectorAll('img').length, scripts: [...document.scripts].map((s) => s.src) }));
	assert.equal(pwned.flag, undefined, 'markup from a name ran');
	assert.equal(pwned.imgs, 0, 'a name became an <img>');
	assert.deepEqual(pwned.scripts, [`${BASE}/ui/app.js`]);
	clean();
});

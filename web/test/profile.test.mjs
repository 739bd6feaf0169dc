// SPDX-License-Identifier: MIT
// profile.js without a browser: the trees the views draw, from a small
// stacks answer whose every figure is known.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Data, fromFolded } from '../src/profile.js';

// main;a;b 10, main;a;c 5, main;d;b 3, main;a;a;b 2 (a recursion)
const J = {
	names: ['main', 'a', 'b', 'c', 'd'], kinds: ['binary', 'binary', 'library', 'kernel', 'binary'],
	stacks: [[10, [0, 1, 2]], [5, [0, 1, 3]], [3, [0, 4, 2]], [2, [0, 1, 1, 2]]],
	totals: { samples: 20, cpu_ns: 200e6 }, unit: 'samples',
};

test('the tree, its totals and CPU time per sample', () => {
	const d = new Data(J, false);
	const t = d.tree();
	assert.equal(t.total, 20);
	assert.equal(d.nsPerSample, 10e6);
	assert.equal(t.find(['main', 'a']).total, 17);
	assert.equal(t.find(['main', 'a', 'b']).self, 10);
	assert.equal(t.kind(t.find(['main', 'a', 'c'])), 'kernel');
	assert.equal(t.matched(/^b$/), 15);
	assert.equal(d.tree(), t, 'built once');
});

test('focus keeps the stacks through a frame; hide merges its callees up', () => {
	const d = new Data(J, false);
	assert.equal(d.tree('a').total, 17);
	assert.equal(d.tree('d').total, 3);
	const h = d.tree(undefined, 'a');
	assert.equal(h.total, 20);
	assert.equal(h.find(['main', 'b']).total, 12);
	assert.equal(h.find(['main', 'c']).total, 5);
	assert.equal(h.find(['main', 'a']), null);
	assert.equal(d.tree('no such').total, 0);
});

test('functions: self and total, recursion once', () => {
	const d = new Data(J, false);
	const { all, rows } = d.functions();
	const by = Object.fromEntries(rows.map((r) => [r.name, r]));
	assert.equal(all, 20);
	assert.deepEqual([by.main.total, by.a.total, by.b.total, by.c.total, by.d.total], [20, 17, 15, 5, 3]);
	assert.deepEqual([by.main.self, by.a.self, by.b.self, by.c.self], [0, 0, 15, 5]);
	assert.equal(rows[0].name, 'main');
});

test('sandwich: callers up from the outermost frame, callees down', () => {
	const d = new Data(J, false);
	const { callers, callees } = d.sandwich('b');
	assert.equal(callers.total, 15);
	assert.equal(callers.shareOf, 20);
	assert.equal(callers.find(['b', 'a']).total, 12);
	assert.equal(callers.find(['b', 'a', 'main']).total, 10);
	assert.equal(callers.find(['b', 'a', 'a', 'main']).total, 2);
	assert.equal(callers.find(['b', 'd']).total, 3);
	const a = d.sandwich('a');
	assert.equal(a.callees.find(['a', 'b']).total, 10);
	assert.equal(a.callees.find(['a', 'a', 'b']).total, 2);
	assert.equal(a.callers.find(['a']).total, 17, 'recursion counted once');
});

test('diff: both sides per node, one side alone, normalised widths', () => {
	const j = {
		base: { totals: { samples: 10, cpu_ns: 0 } }, target: { totals: { samples: 20, cpu_ns: 0 }, unit: 'samples' },
		names: ['main', 'old', 'new', 'both'], kinds: ['binary', 'binary', 'binary', 'binary'],
		stacks: [[5, 0, [0, 1]], [0, 12, [0, 2]], [5, 8, [0, 3]]],
	};
	const d = new Data(j, true);
	const t = d.diffTree(true);
	assert.equal(t.baseTotal, 10);
	assert.equal(t.targetTotal, 20);
	const old = t.find(['main', 'old']), nu = t.find(['main', 'new']);
	assert.deepEqual([old.base, old.target, nu.base, nu.target], [5, 0, 0, 12]);
	assert.ok(old.total > 0 && nu.total > 0, 'either side alone has width');
	assert.equal(Math.round(t.root.total), 1e6);
	const abs = d.diffTree(false);
	assert.equal(abs.root.total, 30);
	const fns = Object.fromEntries(d.diffFunctions().rows.map((r) => [r.name, [r.base, r.target]]));
	assert.deepEqual(fns, { main: [10, 20], old: [5, 0], new: [0, 12], both: [5, 8] });
});

test('folded text gives the same rows', () => {
	const d = fromFolded('main;a;b 10\nmain;a;c 5\nbad line\nmain;d;b 3\n');
	assert.equal(d.tree().total, 18);
	assert.equal(d.tree('d').total, 3);
	assert.equal(d.kinds[d.id('main')], 'function');
});

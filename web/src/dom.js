// SPDX-License-Identifier: MIT
// DOM helpers. Every string goes in as text (textContent, attribute values):
// names come from agents and are hostile; nothing here parses HTML.

// el('div', {class: 'x', onclick: fn}, 'text', child...): a new element.
export function el(tag, attrs, ...kids) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false) continue;
		if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
		else if (k === 'class') e.className = v;
		else if (k === 'text') e.textContent = v;
		else if (k in e && typeof v !== 'string') e[k] = v;
		else e.setAttribute(k, v === true ? '' : String(v));
	}
	for (const k of kids) {
		if (k === undefined || k === null || k === false) continue;
		e.append(k instanceof Node ? k : document.createTextNode(String(k)));
	}
	return e;
}

// Replace @parent's children with @kids.
export function fill(parent, ...kids) {
	parent.replaceChildren(...kids.filter((k) => k !== undefined && k !== null && k !== false));
	return parent;
}

export const $ = (id) => document.getElementById(id);

#!/usr/bin/env node
// Adds to package-lock.json the optional platform packages (other operating systems' native
// binaries) that npm left out because the registry it used could not describe them. Without
// them `npm ci` stops with "Missing: … from lock file". Each added entry carries the exact
// version its parent pins and the os/cpu/libc read from its platform name, so npm skips it on
// other platforms without fetching it. Run after any `npm install` that changes the lockfile:
//   node scripts/complete-lockfile.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;

const osTokens = {
  darwin: 'darwin',
  linux: 'linux',
  win32: 'win32',
  windows: 'win32',
  freebsd: 'freebsd',
  openbsd: 'openbsd',
  netbsd: 'netbsd',
  sunos: 'sunos',
  android: 'android',
  aix: 'aix',
  openharmony: 'openharmony',
};
const cpuTokens = ['x64', 'arm64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el'];

function platformOf(name) {
  const tokens = name.split('/').pop().split('-');
  const os = tokens.map((t) => osTokens[t]).find(Boolean);
  const cpu = tokens.find((t) => cpuTokens.includes(t));
  const libc = tokens.some((t) => t.startsWith('musl'))
    ? 'musl'
    : tokens.some((t) => t === 'gnu' || t.startsWith('gnueabi')) && os === 'linux'
      ? 'glibc'
      : undefined;
  return { os, cpu, libc };
}

/** Where node would find `name` from the package at `parentPath`, or undefined. */
function resolvable(parentPath, name) {
  let base = parentPath;
  for (;;) {
    const candidate = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!base) return undefined;
    const cut = base.lastIndexOf('/node_modules/');
    base = cut === -1 ? '' : base.slice(0, cut);
  }
}

const added = [];
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    if (resolvable(path, name)) continue;
    const version = spec.replace(/^[\^~=]/, '');
    if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(version)) {
      console.error(`skipped ${name}@${spec} (needed by ${path}): not an exact version`);
      continue;
    }
    const { os, cpu, libc } = platformOf(name);
    const target = packages[`node_modules/${name}`] ? `${path}/node_modules/${name}` : `node_modules/${name}`;
    packages[target] = {
      version,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc ? { libc: [libc] } : {}),
      ...(os ? { os: [os] } : {}),
    };
    added.push(`${name}@${version}`);
  }
}

lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(added.length ? `added ${added.length} entries: ${added.join(', ')}` : 'lockfile already complete');

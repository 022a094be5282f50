// check-size: the size limits the house keeps, measured the same way every time.
//
// A non-test source file under src/ may hold at most 800 lines, and a function at most 150
// (a function is any function declaration, method, constructor, accessor, function
// expression or arrow function, measured from its first to its last line; a class is not a
// function, its methods are). Test files (`*.test.ts`, `testing.ts`, `test-*.ts`) are
// exempt. Run by `npm run lint`; `--report` prints the ten longest of each instead of
// checking.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const MAX_FILE_LINES = 800;
const MAX_FUNCTION_LINES = 150;

interface Measure {
  where: string;
  lines: number;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !isTestFile(entry.name)) out.push(path);
  }
  return out;
}

function isTestFile(name: string): boolean {
  return name.endsWith('.test.ts') || name === 'testing.ts' || name.startsWith('test-');
}

function functionName(node: ts.Node, file: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText(file);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (
    ts.isVariableDeclaration(parent) ||
    ts.isPropertyAssignment(parent) ||
    ts.isPropertyDeclaration(parent)
  )
    return parent.name.getText(file);
  return '(anonymous)';
}

function measureFunctions(path: string): { file: Measure; functions: Measure[] } {
  const text = readFileSync(path, 'utf8');
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const rel = relative(process.cwd(), path);
  const lineOf = (pos: number): number => file.getLineAndCharacterOfPosition(pos).line;
  const functions: Measure[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = lineOf(node.getStart(file));
      const lines = lineOf(node.getEnd()) - start + 1;
      functions.push({ where: `${rel}:${start + 1} ${functionName(node, file)}`, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  return { file: { where: rel, lines }, functions };
}

const files = sourceFiles('src').map(measureFunctions);
const allFiles = files.map((f) => f.file).sort((a, b) => b.lines - a.lines);
const allFunctions = files.flatMap((f) => f.functions).sort((a, b) => b.lines - a.lines);

if (process.argv.includes('--report')) {
  console.log('longest files:');
  for (const m of allFiles.slice(0, 10)) console.log(`  ${m.lines}\t${m.where}`);
  console.log('longest functions:');
  for (const m of allFunctions.slice(0, 10)) console.log(`  ${m.lines}\t${m.where}`);
  process.exit(0);
}

const bigFiles = allFiles.filter((m) => m.lines > MAX_FILE_LINES);
const bigFunctions = allFunctions.filter((m) => m.lines > MAX_FUNCTION_LINES);
for (const m of bigFiles)
  console.error(`${m.where}: ${m.lines} lines (limit ${MAX_FILE_LINES} for a non-test file)`);
for (const m of bigFunctions)
  console.error(`${m.where}: ${m.lines} lines (limit ${MAX_FUNCTION_LINES} for a function)`);
if (bigFiles.length + bigFunctions.length > 0) process.exit(1);
console.log(
  `check-size: ${allFiles.length} files ≤ ${MAX_FILE_LINES} lines, ${allFunctions.length} functions ≤ ${MAX_FUNCTION_LINES} lines`,
);

// `npm run build -w @approval-gate/client` (and `npm pack`, through prepack): compiles the client
// from src/client into this package's dist/, with the modules of the service it imports at run
// time and nothing else. Run by Node itself (type stripping): erasable syntax only.
//
// The client's types are the API's zod schemas' (src/client/approval-types.ts infers them), but a
// consumer should not need zod to read them: the declarations of a module only imported for its
// types are written here from what the compiler infers, as plain TypeScript types.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';

const PACKAGE = import.meta.dirname;
const ROOT = path.resolve(PACKAGE, '..', '..');
const SRC = path.join(ROOT, 'src');
const OUT = path.join(PACKAGE, 'dist');

interface PackageJson {
  exports: Record<string, { types: string; default: string }>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const manifest = JSON.parse(await readFile(path.join(PACKAGE, 'package.json'), 'utf8')) as PackageJson;
/** What the compiled code may import besides its own files: Node's modules and the declared (peer) dependencies. */
const allowedPackages = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);

/** Each export's source: `./dist/client/index.js` is compiled from `src/client/index.ts`. */
const entries = Object.values(manifest.exports).map(({ default: js }) =>
  path.join(SRC, js.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts')),
);

const configFile = ts.getParsedCommandLineOfConfigFile(
  path.join(ROOT, 'tsconfig.json'),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: fail },
);
if (!configFile) throw new Error('tsconfig.json could not be read');
const options: ts.CompilerOptions = {
  ...configFile.options,
  rootDir: SRC,
  outDir: OUT,
  noEmit: false,
  declaration: true,
  sourceMap: false,
  // The root's paths point `@approval-gate/client` at the source, for the service's own tools.
  paths: undefined,
};
const program = ts.createProgram(entries, options);
const diagnostics = ts.getPreEmitDiagnostics(program);
if (diagnostics.length > 0) fail(diagnostics);

const emitted = new Map<string, string>();
const result = program.emit(undefined, (file, text) => emitted.set(path.resolve(file), text));
if (result.diagnostics.length > 0) fail(result.diagnostics);

/** The modules a file imports: relative ones resolved to their emitted file, packages by name. */
function importsOf(file: string): { files: string[]; packages: string[] } {
  const text = emitted.get(file);
  if (text === undefined) throw new Error(`${path.relative(OUT, file)} was not emitted`);
  const specifiers = ts.preProcessFile(text, true, true).importedFiles.map((imported) => imported.fileName);
  const files: string[] = [];
  const packages: string[] = [];
  for (const specifier of specifiers) {
    if (specifier.startsWith('.'))
      files.push(path.resolve(path.dirname(file), specifier.replace(/\.js$/, file.endsWith('.d.ts') ? '.d.ts' : '.js')));
    else packages.push(specifier);
  }
  return { files, packages };
}

/** Every file reachable from `starts` through relative imports, not going on from a file `isLeaf` names. */
function closure(starts: string[], isLeaf: (file: string) => boolean = () => false): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!isLeaf(file)) for (const next of importsOf(file).files) visit(next);
  };
  starts.forEach(visit);
  return seen;
}

const outputOf = (source: string, extension: '.js' | '.d.ts') => path.join(OUT, path.relative(SRC, source).replace(/\.ts$/, extension));
const runtime = closure(entries.map((entry) => outputOf(entry, '.js')));
const isTypesOnly = (declarationFile: string) => !runtime.has(declarationFile.replace(/\.d\.ts$/, '.js'));
const declarations = closure(
  entries.map((entry) => outputOf(entry, '.d.ts')),
  isTypesOnly,
);

for (const file of [...runtime, ...[...declarations].filter((file) => !isTypesOnly(file))]) {
  for (const name of importsOf(file).packages) {
    const packageName = name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]!;
    if (name.startsWith('node:') || builtinModules.includes(name) || allowedPackages.has(packageName)) continue;
    throw new Error(
      `${path.relative(OUT, file)} imports ${name}, which is not a dependency of @approval-gate/client: declare it, or keep it out of the client`,
    );
  }
}

/**
 * A module imported by the client's declarations only for its types (approval-types.ts, audit
 * events): its declarations rewritten as the types the compiler inferred, which import nothing.
 */
function typesOnlyDeclaration(declarationFile: string): string {
  const source = program.getSourceFile(path.join(SRC, path.relative(OUT, declarationFile).replace(/\.d\.ts$/, '.ts')));
  if (!source) throw new Error(`no source for ${declarationFile}`);
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(source)!;
  const lines = [`// Written by packages/client/build.ts from ${path.relative(ROOT, source.fileName)}: the types the API's schemas infer.`];
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const declaration = symbol.declarations?.[0];
    if (!declaration || !(ts.isTypeAliasDeclaration(declaration) || ts.isInterfaceDeclaration(declaration))) continue;
    // Generic helpers (`In<S>`, `Out<S>`) are about zod's types, which a consumer does not have.
    if (declaration.typeParameters?.length) continue;
    lines.push(documentation(symbol) + `export type ${symbol.name} = ${printType(checker.getDeclaredTypeOfSymbol(symbol), 0)};`);
  }
  return `${lines.join('\n')}\n`;

  function documentation(symbol: ts.Symbol, indent = ''): string {
    const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
    return text ? `${indent}/** ${text.replace(/\*\//g, '*\\/').replace(/\n/g, `\n${indent} * `)} */\n` : '';
  }

  function printType(type: ts.Type, depth: number): string {
    if (depth > 24) throw new Error(`a type of ${path.relative(ROOT, source!.fileName)} is too deep to write out`);
    if (type.flags & ts.TypeFlags.Boolean) return 'boolean';
    if (type.isUnion()) {
      const members = type.types.map((member) => printType(member, depth + 1));
      const both = members.includes('true') && members.includes('false');
      return [...new Set(both ? members.map((member) => (member === 'true' || member === 'false' ? 'boolean' : member)) : members)].join(
        ' | ',
      );
    }
    if (type.isIntersection()) return type.types.map((member) => `(${printType(member, depth + 1)})`).join(' & ');
    if (!(type.flags & ts.TypeFlags.Object)) return checker.typeToString(type, undefined, ts.TypeFormatFlags.NoTruncation);
    if (checker.isArrayType(type)) return `Array<${printType(checker.getTypeArguments(type as ts.TypeReference)[0]!, depth + 1)}>`;
    if (checker.isTupleType(type)) {
      return `[${checker
        .getTypeArguments(type as ts.TypeReference)
        .map((element) => printType(element, depth + 1))
        .join(', ')}]`;
    }
    // Date, Record<…> and the like: a consumer's TypeScript knows them by name.
    const declared = type.aliasSymbol?.declarations?.[0] ?? type.symbol?.declarations?.[0];
    if (declared && program.isSourceFileDefaultLibrary(declared.getSourceFile()))
      return checker.typeToString(type, undefined, ts.TypeFormatFlags.NoTruncation);
    if (type.getCallSignatures().length > 0)
      throw new Error(`a function type in ${path.relative(ROOT, source!.fileName)} cannot be written out`);
    const indent = '  '.repeat(depth + 1);
    const members = checker
      .getIndexInfosOfType(type)
      .map((info) => `${indent}[key: ${checker.typeToString(info.keyType)}]: ${printType(info.type, depth + 1)};`);
    for (const property of checker.getPropertiesOfType(type)) {
      const optional = property.flags & ts.SymbolFlags.Optional ? '?' : '';
      const name = /^[A-Za-z_$][\w$]*$/.test(property.name) ? property.name : JSON.stringify(property.name);
      members.push(
        `${documentation(property, indent)}${indent}${name}${optional}: ${printType(checker.getTypeOfSymbol(property), depth + 1)};`,
      );
    }
    return members.length === 0 ? '{}' : `{\n${members.join('\n')}\n${'  '.repeat(depth)}}`;
  }
}

await rm(OUT, { recursive: true, force: true });
for (const file of runtime) await write(file, emitted.get(file)!);
for (const file of declarations) await write(file, isTypesOnly(file) ? typesOnlyDeclaration(file) : emitted.get(file)!);
console.error(
  `built @approval-gate/client: ${runtime.size} modules, ${declarations.size} declaration files in ${path.relative(ROOT, OUT)}`,
);

async function write(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
}

function fail(diagnostics: ts.Diagnostic | readonly ts.Diagnostic[]): never {
  const host = { getCanonicalFileName: (name: string) => name, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
  console.error(ts.formatDiagnosticsWithColorAndContext([diagnostics].flat(), host));
  process.exit(1);
}

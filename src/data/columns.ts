/**
 * Which column holds each field of a row type, for rows read and written with raw SQL. Every
 * field of `Row` must be named: when a migration adds a column and Prisma's generated type gains
 * the field, a map that does not know it fails to compile, so no statement built from the map can
 * silently leave it out. A table's map names its columns (test/column-maps.test.ts holds each
 * against the migrated database); a statement that reads another shape (a join, a computed value)
 * has a row type of its own and a map of it, whose values are built from the tables' maps or are
 * the SQL expressions that compute them. See docs/architecture.md#raw-sql-and-typed-rows.
 */
export type ColumnMap<Row> = { readonly [Field in keyof Row]-?: string };

/**
 * A row as `pg` hands it over: int8 columns (Prisma's `BigInt`) come back as strings, since a
 * JavaScript number could not hold all of them; every other column as Prisma's model types it.
 */
export type PgRow<Row> = {
  [Field in keyof Row]: Row[Field] extends bigint ? string : Row[Field] extends bigint | null ? string | null : Row[Field];
};

/** `column AS "field", ...`: rows come back with the fields of the row type. */
export function selectList<Row>(columns: ColumnMap<Row>): string {
  return Object.entries<string>(columns)
    .map(([field, column]) => (field === column ? column : `${column} AS "${field}"`))
    .join(', ');
}

/** Some fields of a map, under the same columns: the map of a projection of the row. */
export function pickColumns<Row, Field extends keyof Row>(columns: ColumnMap<Row>, fields: readonly Field[]): ColumnMap<Pick<Row, Field>> {
  return Object.fromEntries(fields.map((field) => [field, columns[field]])) as ColumnMap<Pick<Row, Field>>;
}

/** The map with every column qualified by a table alias (`m.email`), for statements that join tables. */
export function qualified<Row>(alias: string, columns: ColumnMap<Row>): ColumnMap<Row> {
  return Object.fromEntries(Object.entries<string>(columns).map(([field, column]) => [field, `${alias}.${column}`])) as ColumnMap<Row>;
}

/** The row keyed by column name, as `jsonb_populate_record` reads it. */
export function byColumn<Row>(columns: ColumnMap<Row>, row: Row): Record<string, unknown> {
  return Object.fromEntries(Object.entries<string>(columns).map(([field, column]) => [column, row[field as keyof Row]]));
}

/**
 * Which column holds each field of a row type, for tables read and written with raw SQL. Every
 * field of `Row` must be named: when a migration adds a column and Prisma's generated type gains
 * the field, a map that does not know it fails to compile, so no statement built from the map can
 * silently leave it out.
 */
export type ColumnMap<Row> = { readonly [Field in keyof Row]-?: string };

/** `column AS "field", ...`: rows come back with the fields of the row type. */
export function selectList<Row>(columns: ColumnMap<Row>): string {
  return Object.entries<string>(columns)
    .map(([field, column]) => (field === column ? column : `${column} AS "${field}"`))
    .join(', ');
}

/** The row keyed by column name, as `jsonb_populate_record` reads it. */
export function byColumn<Row>(columns: ColumnMap<Row>, row: Row): Record<string, unknown> {
  return Object.fromEntries(Object.entries<string>(columns).map(([field, column]) => [column, row[field as keyof Row]]));
}

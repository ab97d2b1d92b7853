/**
 * A count as English readers write it ("10,000"), for messages, pages and the API's descriptions.
 * Not `toLocaleString`: the first use of Intl in a process maps a share of Node's ICU data into it,
 * which every web process would then carry for a few thousands separators (bench/README.md, the
 * long-polls' row).
 */
export function formatCount(count: number): string {
  return String(count).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

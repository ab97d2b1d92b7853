/** A secret the API shows only once (API key, webhook signing secret): readable, selectable, and said to be so. */
export function SecretOnce({ label, secret, onDone }: { label: string; secret: string; onDone(): void }) {
  return (
    <div className="secret" role="status">
      <label>
        {label}
        <input readOnly value={secret} onFocus={(event) => event.currentTarget.select()} className="mono" />
      </label>
      <p>Copy it now: it is shown this once and cannot be read back.</p>
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

/** A set of choices, one checkbox each, under a legend: events, scopes, statuses, roles, channels. */
export function CheckboxGroup<T extends string>({
  legend,
  options,
  value,
  onChange,
}: {
  legend: string;
  options: readonly T[];
  value: readonly T[];
  onChange(value: T[]): void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map((option) => (
        <label key={option} className="inline">
          <input
            type="checkbox"
            checked={value.includes(option)}
            onChange={(event) => onChange(event.target.checked ? [...value, option] : value.filter((known) => known !== option))}
          />
          {option}
        </label>
      ))}
    </fieldset>
  );
}

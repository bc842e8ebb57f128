import { inputStyle } from "./styles";

/**
 * The choice of one of this server's handle domains (ATRIUM_USER_DOMAINS), for the forms that take a handle when there
 * are several: the handle page and the sign-up form. Its refusal stands under it, tied to it (aria-describedby).
 */
export function DomainSelect({
  label,
  domains,
  value,
  error,
  autoFocus,
  onChange,
}: {
  label: string;
  domains: readonly string[];
  value?: string;
  error?: string;
  autoFocus?: boolean;
  /** With JavaScript: the domain as it is chosen (the handle page's preview). */
  onChange?: React.ChangeEventHandler<HTMLSelectElement>;
}) {
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor="domain" className="font-medium">
        {label}
      </label>
      <select
        id="domain"
        name="domain"
        defaultValue={value ?? domains[0]}
        className={inputStyle}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? "domain-error" : undefined}
        autoFocus={autoFocus}
        onChange={onChange}
      >
        {domains.map((domain) => (
          <option key={domain} value={domain}>
            {domain}
          </option>
        ))}
      </select>
      {error ? (
        <p id="domain-error" className="text-sm font-medium text-red-700 dark:text-red-300">
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** A checkbox with its label and a hint under it, tied by id and aria-describedby: a plain form field, no script. */
export function CheckboxField({ id, name = id, label, hint, defaultChecked }: { id: string; name?: string; label: string; hint: string; defaultChecked?: boolean }) {
  return (
    <div className="flex items-start gap-3">
      <input id={id} name={name} type="checkbox" defaultChecked={defaultChecked} className="mt-1 size-5 shrink-0 accent-brand" aria-describedby={`${id}-hint`} />
      <div className="flex min-w-0 flex-col gap-0.5">
        <label htmlFor={id} className="font-medium">
          {label}
        </label>
        <p id={`${id}-hint`} className="text-sm break-words text-slate-600 dark:text-slate-300">
          {hint}
        </p>
      </div>
    </div>
  );
}

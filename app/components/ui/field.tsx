import { useEffect, useState } from "react";
import { useT } from "./i18n";
import { inputStyle } from "./styles";

type FieldProps = {
  id: string;
  name: string;
  label: string;
  type?: "text" | "password" | "email";
  autoComplete?: string;
  defaultValue?: string;
  required?: boolean;
  readOnly?: boolean;
  minLength?: number;
  maxLength?: number;
  /** A message tied to this field (aria-describedby), shown under it. */
  error?: string;
  /** Help shown under the field, also tied to it. */
  hint?: string;
  /** Another element describing this field, e.g. a form-wide error. */
  describedBy?: string;
  /** Marks the field invalid when the error is shown elsewhere (a form-wide message). */
  invalid?: boolean;
  inputRef?: React.Ref<HTMLInputElement>;
  /**
   * Beside the label, on its line (e.g. "Forgot password?"): what belongs to the field without a line of its own. In
   * the tab order it comes after the input, so that Tab from the field before reaches this field first (issue 28,
   * item 19: a password typed after Tab from the handle went to "Forgot password?"); with `asideFirst`, before it
   * (an alternative to filling in the field, such as a passkey, which must not stand between two fields).
   */
  labelAside?: React.ReactNode;
  asideFirst?: boolean;
  /** Focus on arrival (the browser does it before any JavaScript runs): the field a failed form post asks to correct. */
  autoFocus?: boolean;
  /** With JavaScript: what is typed, as it is typed (a live preview, a strength meter). The form works without it. */
  onChange?: React.ChangeEventHandler<HTMLInputElement>;
  /** Under the input, before its hint: feedback that belongs to it (what JavaScript shows as it is typed). */
  below?: React.ReactNode;
};

/**
 * A labelled input whose hint and error are announced with it. A grid puts the label and its aside on the first line
 * and the input under them, whatever their order in the document (which is the tab order).
 */
export function Field({ id, name, label, type = "text", error, hint, describedBy, invalid, inputRef, labelAside, asideFirst = false, below, ...input }: FieldProps) {
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const described = [errorId, hintId, describedBy].filter(Boolean).join(" ") || undefined;
  const aside = labelAside ? <div className="col-start-2 row-start-1 flex items-end justify-end self-end text-right">{labelAside}</div> : null;
  return (
    <div className="grid grid-cols-[minmax(0,1fr)_auto] gap-x-3 gap-y-1">
      <label htmlFor={id} className="col-start-1 row-start-1 self-end font-medium">
        {label}
      </label>
      {asideFirst ? aside : null}
      <div className="col-span-2">
        {type === "password" ? (
          <PasswordInput id={id} name={name} invalid={Boolean(error || invalid)} describedBy={described} inputRef={inputRef} input={input} />
        ) : (
          <input ref={inputRef} id={id} name={name} type={type} aria-invalid={error || invalid ? true : undefined} aria-describedby={described} className={inputStyle} {...input} />
        )}
      </div>
      {asideFirst ? null : aside}
      {below ? <div className="col-span-2">{below}</div> : null}
      {hint ? (
        <p id={hintId} className="col-span-2 text-sm text-slate-600 dark:text-slate-300">
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={errorId} className="col-span-2 text-sm font-medium text-red-700 dark:text-red-300">
          {error}
        </p>
      ) : null}
    </div>
  );
}

type InputAttributes = Omit<FieldProps, "id" | "name" | "label" | "type" | "error" | "hint" | "describedBy" | "invalid" | "inputRef" | "labelAside" | "asideFirst" | "below">;

/**
 * A password input with a Show/Hide button inside its box (issue 19): typing a password on a phone is error-prone.
 * The button needs JavaScript, so it appears once the page is hydrated; it sits over the input's right padding, so
 * its arrival moves nothing. Its name says what it does to the password ("Show password").
 */
function PasswordInput({ id, name, invalid, describedBy, inputRef, input }: { id: string; name: string; invalid: boolean; describedBy?: string; inputRef?: React.Ref<HTMLInputElement>; input: InputAttributes }) {
  const { t } = useT();
  const [shown, setShown] = useState(false);
  const [interactive, setInteractive] = useState(false);
  useEffect(() => setInteractive(true), []);
  return (
    <div className="relative">
      <input ref={inputRef} id={id} name={name} type={shown ? "text" : "password"} aria-invalid={invalid ? true : undefined} aria-describedby={describedBy} className={`${inputStyle} pr-24`} {...input} />
      {interactive ? (
        <button
          type="button"
          aria-controls={id}
          onClick={() => setShown((value) => !value)}
          className="absolute inset-y-0 right-0 min-w-11 rounded-r-lg px-3 text-sm font-medium text-brand-text hover:underline dark:text-brand-text-dark"
        >
          {/* Its name is the whole phrase, from its content (not aria-label: the field's label stays the only one naming the input). */}
          <span aria-hidden="true">{shown ? t("common:password.hide") : t("common:password.show")}</span>
          <span className="sr-only">{shown ? t("common:password.hidePassword") : t("common:password.showPassword")}</span>
        </button>
      ) : null}
    </div>
  );
}

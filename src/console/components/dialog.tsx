import { useEffect, useId, useRef, type FormEvent, type ReactNode } from 'react';

/**
 * A modal dialog (the native <dialog>: focus moves in and stays in, Escape closes it). Rendered
 * only while open; `onClose` runs when the user dismisses it.
 */
export function Dialog({ title, onClose, children }: { title: string; onClose(): void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    dialog?.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children}
    </dialog>
  );
}

/** A dialog whose form submits with one button (its `submitLabel`) and closes with Cancel. */
export function FormDialog({
  title,
  submitLabel,
  danger,
  pending,
  error,
  onSubmit,
  onClose,
  children,
}: {
  title: string;
  submitLabel: string;
  danger?: boolean;
  pending?: boolean;
  error?: ReactNode;
  onSubmit(): void;
  onClose(): void;
  children: ReactNode;
}) {
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit();
  };
  return (
    <Dialog title={title} onClose={onClose}>
      <form onSubmit={submit} className="stack">
        {children}
        {error}
        <div className="actions">
          <button type="submit" className={danger ? 'danger' : 'primary'} disabled={pending}>
            {submitLabel}
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** Asks before something that cannot be undone. */
export function ConfirmDialog({
  message,
  confirmLabel,
  onConfirm,
  ...rest
}: {
  title: string;
  message: ReactNode;
  confirmLabel: string;
  pending?: boolean;
  error?: ReactNode;
  onConfirm(): void;
  onClose(): void;
}) {
  return (
    <FormDialog {...rest} submitLabel={confirmLabel} danger onSubmit={onConfirm}>
      <p>{message}</p>
    </FormDialog>
  );
}

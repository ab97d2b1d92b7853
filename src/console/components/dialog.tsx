import { useEffect, useId, useRef, type ReactNode } from 'react';

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

/** Asks before something that cannot be undone. */
export function ConfirmDialog({
  title,
  message,
  confirmLabel,
  pending,
  error,
  onConfirm,
  onClose,
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
    <Dialog title={title} onClose={onClose}>
      <p>{message}</p>
      {error}
      <div className="actions">
        <button type="button" className="danger" disabled={pending} onClick={onConfirm}>
          {confirmLabel}
        </button>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

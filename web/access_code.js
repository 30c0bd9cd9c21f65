// Access codes at join: an event may admit only holders of a code (docs/decisions/0030-access-codes.md).
// The join's 403 `code_required` (or `code_invalid`) shows the code field; the customer types the
// code and presses "Join the queue" (or Enter), and every join after that carries it. Nothing is
// kept beyond the tab: the server binds the code to the account at the first join, and a customer
// already queued is never asked again.

const field = document.getElementById('access-code-field');
const input = document.getElementById('access-code');
const hint = document.getElementById('access-code-hint');

/** Whether a refused join asks for a code (none sent, or one that does not let us in). */
export function isCodeProblem(problem) {
  return problem.code === 'code_required' || problem.code === 'code_invalid';
}

/** The body's `code` field, once the field is shown and filled in: `{code}` or `{}`. */
export function codeBody() {
  const typed = field && !field.hidden ? input.value.trim() : '';
  return typed ? { code: typed } : {};
}

/** Shows the code field with the server's sentence, and puts the cursor in it. */
export function askForCode(problem) {
  if (!field) return;
  field.hidden = false;
  hint.textContent =
    problem.code === 'code_invalid'
      ? `${problem.message} Codes look like 7QKD-M3XA-9FPE-T2WC.`
      : 'This on-sale is for holders of an access code. Type yours (it looks like 7QKD-M3XA-9FPE-T2WC) and join.';
  input.setAttribute('aria-invalid', String(problem.code === 'code_invalid'));
  input.focus();
  input.select();
}

// Enter in the code field joins, as the button does.
input?.addEventListener('keydown', (event) => {
  if (event.key === 'Enter') {
    event.preventDefault();
    document.getElementById('join')?.click();
  }
});

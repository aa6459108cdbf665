import type { FieldError } from '../common/errors/api-exception';
import {
  hasCredentials,
  isMaskedCredentials,
  MASK,
  maskCredentials,
  restoreCredentials,
} from '../webhooks/url-credentials';
import type { WebhookStep, WorkflowStep } from './workflow-steps';

/**
 * What a WEBHOOK step keeps sealed: every header value (any of them may be a
 * credential, and a list of names that count would miss some) and the URL
 * when it carries credentials. `steps` holds `***` in their place.
 */
export interface StepSecret {
  url?: string;
  headers?: Record<string, string>;
}

/** The sealed part of a workflow's steps, by step id. */
export type StepSecrets = Record<string, StepSecret>;

/** Every WEBHOOK step of the tree, with its field path (`steps[0].then[1]`). */
function webhookSteps(
  steps: readonly WorkflowStep[],
  path = 'steps',
): Array<{ step: WebhookStep; at: string }> {
  const out: Array<{ step: WebhookStep; at: string }> = [];
  steps.forEach((step, i) => {
    const at = `${path}[${i}]`;
    if (step.type === 'WEBHOOK') out.push({ step, at });
    if (step.type === 'CONDITION' || step.type === 'WAIT_FOR_EVENT') {
      out.push(...webhookSteps(step.then ?? [], `${at}.then`));
      out.push(...webhookSteps(step.else ?? [], `${at}.else`));
    }
  });
  return out;
}

/** Rebuilds the tree with each WEBHOOK step replaced by `change(step)`. */
function mapWebhookSteps(
  steps: readonly WorkflowStep[],
  change: (step: WebhookStep) => WebhookStep,
): WorkflowStep[] {
  return steps.map((step) => {
    if (step.type === 'WEBHOOK') return change(step);
    if (step.type === 'CONDITION')
      return {
        ...step,
        then: mapWebhookSteps(step.then, change),
        else: mapWebhookSteps(step.else, change),
      };
    if (step.type === 'WAIT_FOR_EVENT')
      return {
        ...step,
        then: step.then && mapWebhookSteps(step.then, change),
        else: step.else && mapWebhookSteps(step.else, change),
      };
    return step;
  });
}

function masked(step: WebhookStep): WebhookStep {
  const out: WebhookStep = { ...step, url: maskCredentials(step.url) };
  if (step.headers)
    out.headers = Object.fromEntries(Object.keys(step.headers).map((name) => [name, MASK]));
  return out;
}

/** The steps as answers show them: every WEBHOOK header value and URL credential `***` (rows saved before sealing included). */
export function maskSteps(steps: readonly WorkflowStep[]): WorkflowStep[] {
  return mapWebhookSteps(steps, masked);
}

/**
 * The real values of the stored steps' WEBHOOK calls: the sealed ones, and a
 * value a row saved before sealing still holds in the clear.
 */
export function realValues(
  stored: readonly WorkflowStep[],
  sealed: StepSecrets,
): Map<string, { url: string; headers: Record<string, string> }> {
  const out = new Map<string, { url: string; headers: Record<string, string> }>();
  for (const { step } of webhookSteps(stored)) {
    const secret = sealed[step.id] ?? {};
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(step.headers ?? {})) {
      const real = secret.headers?.[name] ?? (value === MASK ? undefined : value);
      if (real !== undefined) headers[name] = real;
    }
    out.set(step.id, { url: secret.url ?? step.url, headers });
  }
  return out;
}

/**
 * Splits checked steps into what is stored in `steps` (masked) and what is
 * sealed. A value sent as `***` keeps the stored one of the same step and
 * header (an answer showed it that way); `***` credentials in a URL keep the
 * stored URL's, on the same origin only. `***` with nothing stored to keep is
 * a 422 on its field.
 */
export function sealableSteps(
  steps: readonly WorkflowStep[],
  stored: ReturnType<typeof realValues>,
): { steps: WorkflowStep[]; secrets: StepSecrets; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const secrets: StepSecrets = {};
  const paths = new Map(webhookSteps(steps).map(({ step, at }) => [step.id, at]));
  const out = mapWebhookSteps(steps, (step) => {
    const at = paths.get(step.id) as string;
    const before = stored.get(step.id);
    const secret: StepSecret = {};
    let url = step.url;
    if (isMaskedCredentials(url)) {
      const restored = before ? restoreCredentials(url, before.url) : null;
      if (restored === null)
        errors.push({
          field: `${at}.url`,
          message: `${MASK} stands for the step's stored URL credentials, and it has none for this origin: send them in full`,
          code: 'custom',
        });
      else url = restored;
    }
    if (hasCredentials(url)) secret.url = url;
    if (step.headers) {
      secret.headers = {};
      for (const [name, value] of Object.entries(step.headers)) {
        const real = value === MASK ? before?.headers[name] : value;
        if (real === undefined)
          errors.push({
            field: `${at}.headers.${name}`,
            message: `${MASK} stands for the stored value of this header, and the step has none: send the value`,
            code: 'custom',
          });
        else secret.headers[name] = real;
      }
    }
    if (secret.url !== undefined || secret.headers !== undefined) secrets[step.id] = secret;
    return masked({ ...step, url });
  });
  return { steps: out, secrets, errors };
}

import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { errorMessage } from '../common/errors/error-message';
import { RefusedTargetError, sendOutbound } from '../common/http/outbound-http';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ContactsService } from '../contacts/contacts.service';
import { EventsService } from '../events/events.service';
import { EmailsService } from '../sending/emails.service';
import { TemplateRenderError } from '../templates/template-renderer';
import { TemplatesService } from '../templates/templates.service';
import { signWebhook } from '../webhooks/webhook-signature';
import { sendData } from './workflow-send-data';
import { UnreadableWorkflowSecretError, WorkflowSecrets } from './workflow-secrets';
import type { WebhookStep } from './workflow-steps';
import type { WorkflowExecution } from './workflow.entity';

/** What a WEBHOOK call answered, made before the execution is locked (it may take 10 s). */
export type WebhookOutcome =
  | { kind: 'answered'; status: number; body: string; stepId: string }
  | { kind: 'refused'; error: string; stepId: string }
  | { kind: 'unreachable'; error: string; stepId: string };

const WEBHOOK_TIMEOUT_MS = 10_000;
const WEBHOOK_BODY_BYTES = 1024;

/**
 * A WEBHOOK step's outbound call: the headers and body rendered for the
 * contact, signed with the workflow's secret (Standard Webhooks), sent
 * through the outbound guard. The engine records what it answered.
 */
@Injectable()
export class WorkflowWebhookCaller {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly contacts: ContactsService,
    private readonly templates: TemplatesService,
    private readonly emails: EmailsService,
    private readonly events: EventsService,
    private readonly secrets: WorkflowSecrets,
  ) {}

  /** The step's call, made before the execution is locked; every failure is an outcome, none is thrown. */
  async call(x: WorkflowExecution, step: WebhookStep): Promise<WebhookOutcome> {
    try {
      const contact = await this.contacts.findRow(
        this.dataSource.manager,
        x.projectId,
        x.contactId,
      );
      if (!contact)
        return { kind: 'refused', error: 'the contact no longer exists', stepId: step.id };
      const unsubscribeUrl = this.emails.unsubscribeUrl(x.projectId, contact.id, null);
      const data = await sendData(this.events, this.dataSource.manager, x);
      // `step` holds `***` for header values and URL credentials; the real ones are sealed
      // (a workflow saved before sealing still holds them in `step`).
      const sealed = (await this.secrets.stepSecretsOf(x.workflowId))[step.id];
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(step.headers ?? {})) {
        const source = sealed?.headers?.[name] ?? value;
        headers[name] = (
          await this.templates.renderText(x.projectId, source, contact, data, unsubscribeUrl)
        ).replace(/[\r\n\0]/g, ' ');
      }
      const body =
        step.body !== undefined
          ? await this.templates.renderText(x.projectId, step.body, contact, data, unsubscribeUrl)
          : undefined;
      if (
        body !== undefined &&
        !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
      ) {
        headers['content-type'] = 'application/json';
      }
      headers['user-agent'] ??= 'Mailwright-Workflows/1';
      Object.assign(headers, await this.signatureHeaders(x, step, headers, body));
      const answer = await sendOutbound({
        url: sealed?.url ?? step.url,
        method: step.method,
        headers,
        body,
        timeoutMs: WEBHOOK_TIMEOUT_MS,
        allowPrivate: this.config.webhookAllowPrivate,
        maxBodyBytes: WEBHOOK_BODY_BYTES,
      });
      return { kind: 'answered', status: answer.status, body: answer.body, stepId: step.id };
    } catch (error) {
      if (
        error instanceof RefusedTargetError ||
        error instanceof TemplateRenderError ||
        error instanceof UnreadableWorkflowSecretError
      ) {
        return { kind: 'refused', error: error.message, stepId: step.id };
      }
      return { kind: 'unreachable', error: errorMessage(error), stepId: step.id };
    }
  }

  /**
   * Standard Webhooks headers, signed with the workflow's secret; they replace
   * any the step sets itself. The id is the same on every retry of the step.
   */
  private async signatureHeaders(
    x: WorkflowExecution,
    step: WebhookStep,
    headers: Record<string, string>,
    body: string | undefined,
  ) {
    for (const name of Object.keys(headers)) {
      if (/^webhook-(id|timestamp|signature)$/i.test(name)) delete headers[name];
    }
    const secret = await this.secrets.secretOf(x.workflowId);
    const id = `wfx_${x.id}_${step.id}`;
    const timestamp = Math.floor(Date.now() / 1000);
    return {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(secret, id, timestamp, body ?? ''),
    };
  }
}

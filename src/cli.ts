import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { parseArgs } from 'node:util';
import { ApiException } from './common/errors/api-exception';
import {
  AppConfig,
  ConfigValidationError,
  environmentWithDotEnv,
  loadConfig,
} from './config/config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { prepareDatabase } from './database/prepare-database';
import { WebhookSecretsModule } from './webhooks/webhook-secrets.module';
import { WebhookSecretsService } from './webhooks/webhook-secrets.service';
import { SealedKeysModule } from './domains/sealed-keys.module';
import { SealedKeysService, UnreadableSealedKeysError } from './domains/sealed-keys.service';
import { ProviderCredentialsModule } from './provider-hooks/provider-credentials.module';
import {
  ProviderCredentials,
  UnreadableProviderCredentialsError,
} from './provider-hooks/provider-credentials';
import { workerHealth } from './health/worker-health';
import { ApiKeyType } from './common/auth/api-key.crypto';
import { ProjectsModule } from './projects/projects.module';
import { SenderHealthStatusModule } from './bounces/sender-health-status.module';
import { SenderHealthStatus } from './bounces/sender-health-status';
import { ProjectsService } from './projects/projects.service';
import { RedisModule } from './queue/redis.module';
import { InboundStatus } from './inbound/inbound-message.entity';
import { InboundListing } from './inbound/inbound-listing';
import { InboundListingModule } from './inbound/inbound-listing.module';
import { errorMessage } from './common/errors/error-message';

const USAGE = `Usage: node dist/cli.js <command> [--json]

Commands:
  migrate                                   apply pending database migrations
  projects create --name <name>             create a project with one secret and one public key
  projects list                             list projects
  projects disable <projectId>              refuse every request of the project (403)
  projects enable <projectId>               allow it again
  projects resume-sending <projectId>       set sender health back to HEALTHY after a pause (paused campaigns stay PAUSED)
  keys create <projectId> --type secret|public
  keys revoke <keyId>
  keys list <projectId>
  health worker                             exit 0 when a worker process here consumes every queue (container health check)
  inbound list [--status <status>] [--limit <n>]
                                            messages the inbound listener stored, newest first (default 20; status
                                            RECEIVED, PROCESSED, UNMATCHED, IGNORED or FAILED): unmatched bounces show here
  secrets rotate                            re-seal stored secrets (DKIM keys, webhook and workflow signing secrets, provider webhook credentials) under the current APP_SECRET;
                                            earlier secrets are read from APP_SECRET_PREVIOUS

--json prints one JSON document on stdout. API keys are shown once, on creation.`;

class UsageError extends Error {}

interface ListFilters {
  status?: string;
  limit?: string;
}

@Module({})
class CliModule {
  static register(config: AppConfig) {
    return {
      module: CliModule,
      imports: [
        ConfigModule.forRoot(config),
        DatabaseModule,
        RedisModule,
        ProjectsModule,
        SealedKeysModule,
        WebhookSecretsModule,
        InboundListingModule,
        ProviderCredentialsModule,
        SenderHealthStatusModule,
      ],
    };
  }
}

type Output = { json: unknown; text: string };

async function run(
  config: AppConfig,
  positionals: string[],
  name: string | undefined,
  type: string | undefined,
  filters: ListFilters,
) {
  const [group, action, arg] = positionals;
  if (group === 'health' && action === 'worker') return workerHealth(config);
  if (group === 'migrate') {
    const applied = await prepareDatabase(config.databaseDirectUrl);
    return {
      json: { applied },
      text: applied.length ? `Applied: ${applied.join(', ')}` : 'Nothing to apply',
    };
  }
  await prepareDatabase(config.databaseDirectUrl);
  const app = await NestFactory.createApplicationContext(CliModule.register(config), {
    logger: ['error'],
  });
  try {
    const projects = app.get(ProjectsService);
    return await dispatch(
      projects,
      app.get(SealedKeysService),
      app.get(WebhookSecretsService),
      app.get(InboundListing),
      app.get(ProviderCredentials),
      app.get(SenderHealthStatus),
      group,
      action,
      arg,
      name,
      type,
      filters,
    );
  } finally {
    await app.close();
  }
}

async function dispatch(
  projects: ProjectsService,
  sealedKeys: SealedKeysService,
  webhookSecrets: WebhookSecretsService,
  inbound: InboundListing,
  providerCredentials: ProviderCredentials,
  senderHealth: SenderHealthStatus,
  group: string | undefined,
  action: string | undefined,
  arg: string | undefined,
  name: string | undefined,
  type: string | undefined,
  filters: ListFilters,
): Promise<Output> {
  const need = (value: string | undefined, what: string): string => {
    if (!value) throw new UsageError(`Missing ${what}`);
    return value;
  };
  switch (`${group} ${action}`) {
    case 'projects create': {
      const created = await projects.createProject(need(name, '--name'));
      return {
        json: created,
        text: `Project ${created.project.id} (${created.project.name})\nsecret key: ${created.secretKey}\npublic key: ${created.publicKey}\nStore these keys now: they are not shown again.`,
      };
    }
    case 'projects list': {
      const list = await projects.listProjects();
      return {
        json: { projects: list },
        text:
          list
            .map((p) => `${p.id}  ${p.enabled ? 'enabled ' : 'disabled'}  ${p.name}`)
            .join('\n') || 'No projects',
      };
    }
    case 'projects disable':
    case 'projects enable': {
      const project = await projects.setEnabled(need(arg, '<projectId>'), action === 'enable');
      return {
        json: { project },
        text: `Project ${project.id} ${project.enabled ? 'enabled' : 'disabled'}`,
      };
    }
    case 'projects resume-sending': {
      const project = await senderHealth.resume(need(arg, '<projectId>'));
      return {
        json: { id: project.id, sendingStatus: project.sendingStatus },
        text: `Project ${project.id} sending resumed (${project.sendingStatus})`,
      };
    }
    case 'keys create': {
      if (type !== 'secret' && type !== 'public')
        throw new UsageError('--type must be secret or public');
      const created = await projects.createKey(
        need(arg, '<projectId>'),
        type === 'secret' ? ApiKeyType.SECRET : ApiKeyType.PUBLIC,
      );
      return {
        json: created,
        text: `Key ${created.key.id}: ${created.apiKey}\nStore it now: it is not shown again.`,
      };
    }
    case 'keys revoke': {
      const key = await projects.revokeKey(need(arg, '<keyId>'));
      return { json: { key }, text: `Key ${key.id} revoked` };
    }
    case 'keys list': {
      const keys = await projects.listKeys(need(arg, '<projectId>'));
      return {
        json: { keys },
        text:
          keys
            .map(
              (k) =>
                `${k.id}  ${k.type.padEnd(6)}  ${k.prefix}…  ${k.revoked ? 'revoked' : 'active'}`,
            )
            .join('\n') || 'No keys',
      };
    }
    case 'inbound list': {
      const status = filters.status?.toUpperCase() ?? null;
      if (status !== null && !Object.values<string>(InboundStatus).includes(status))
        throw new UsageError(`--status must be one of ${Object.values(InboundStatus).join(', ')}`);
      const limit = filters.limit === undefined ? 20 : Number(filters.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw new UsageError('--limit must be an integer from 1 to 1000');
      const messages = await inbound.list(status as InboundStatus | null, limit);
      return {
        json: { messages },
        text:
          messages
            .map((m) =>
              [
                m.id,
                m.receivedAt.toISOString(),
                m.status.padEnd(9),
                `from <${m.mailFrom}>`,
                `to ${m.rcptTo.join(',')}`,
                `${m.bytes} bytes`,
                m.result
                  ? `${m.result.format} email=${m.result.emailId ?? '-'} reports=${JSON.stringify(m.result.reports)}${m.result.error ? ` error=${m.result.error}` : ''}`
                  : '',
              ].join('  '),
            )
            .join('\n') || 'No inbound messages',
      };
    }
    case 'secrets rotate': {
      const rotated = await sealedKeys.rotate();
      const signing = await webhookSecrets.rotate();
      const providers = await providerCredentials.rotate();
      return {
        json: {
          ...rotated,
          webhookSecrets: signing.endpoints,
          workflowSecrets: signing.workflows,
          webhookCredentials: signing.credentials,
          providerCredentials: providers,
        },
        text:
          `Re-sealed ${rotated.resealed} DKIM key(s) under the current APP_SECRET; ${rotated.alreadyCurrent} already were.\n` +
          `Re-sealed ${signing.endpoints.resealed} webhook signing secret(s); ${signing.endpoints.alreadyCurrent} already were.\n` +
          `Re-sealed ${signing.workflows.resealed} workflow signing secret(s); ${signing.workflows.alreadyCurrent} already were.\n` +
          `Re-sealed ${signing.credentials.resealed} set(s) of webhook URL or WEBHOOK step credentials; ${signing.credentials.alreadyCurrent} already were; sealed ${signing.credentials.sealed} endpoint URL(s) saved with clear credentials.\n` +
          `Re-sealed ${providers.resealed} set(s) of provider webhook credentials; ${providers.alreadyCurrent} already were.\n` +
          'Stored keys no longer need APP_SECRET_PREVIOUS; keep it set while unsubscribe links signed with an earlier secret should keep working.',
      };
    }
    default:
      throw new UsageError(
        `Unknown command: ${[group, action].filter(Boolean).join(' ') || '(none)'}`,
      );
  }
}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        name: { type: 'string' },
        type: { type: 'string' },
        status: { type: 'string' },
        limit: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    console.error((error as Error).message + '\n\n' + USAGE);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const emit = (json: unknown, text: string, stream: NodeJS.WriteStream = process.stdout) =>
    stream.write((values.json ? JSON.stringify(json) : text) + '\n');
  try {
    const config = loadConfig(environmentWithDotEnv());
    const out = await run(config, positionals, values.name, values.type, {
      status: values.status,
      limit: values.limit,
    });
    emit(out.json, out.text);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      emit(
        { error: { code: 'USAGE', message: error.message } },
        `${error.message}\n\n${USAGE}`,
        values.json ? process.stdout : process.stderr,
      );
      return 2;
    }
    const code =
      error instanceof ApiException ||
      error instanceof UnreadableSealedKeysError ||
      error instanceof UnreadableProviderCredentialsError
        ? error.code
        : error instanceof ConfigValidationError
          ? 'CONFIG'
          : 'ERROR';
    const message = errorMessage(error);
    emit(
      { error: { code, message } },
      `Error: ${message}`,
      values.json ? process.stdout : process.stderr,
    );
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { plainToInstance, Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBase64,
  IsBoolean,
  IsDefined,
  IsEmail,
  IsIn,
  IsNotEmpty,
  IsObject,
  IsString,
  IsUUID,
  Matches,
  MaxLength,
  ValidateNested,
  ValidationOptions,
} from 'class-validator';
import { constraint } from '../../common/validation/constraint';
import { isPlainObject } from '../../common/validation/json-text';
import {
  DisplayNameField,
  IsJsonObject,
  MaxJsonSize,
  NoLineBreaks,
  NotBlank,
  OptionalNotNull,
  rawJsonValue,
  toNormalizedEmail,
  IsSenderAddress,
} from '../../common/validation/validators';
import { ContactDataField } from '../../contacts/dto/validators';
import { IsLiquidTemplate } from '../../templates/template-validators';

/** An address with an optional display name: `{email, name?}`. */
export class MailboxDto {
  @ApiProperty({ format: 'email' })
  @IsDefined()
  @Transform(toNormalizedEmail)
  @IsEmail({ require_tld: true, allow_display_name: false })
  @MaxLength(320)
  email: string;

  @DisplayNameField()
  name?: string;
}

/** `"a@b.c"` and `{email, name?}` both become a MailboxDto; anything else is left for validation to refuse. */
function toMailbox(value: unknown): unknown {
  if (typeof value === 'string') return plainToInstance(MailboxDto, { email: value });
  if (isPlainObject(value)) return plainToInstance(MailboxDto, value);
  return value;
}

export const MAX_RECIPIENTS = 50;
/**
 * Entries of `to` accepted before duplicates collapse. Past it the list is
 * refused without validating every entry: a 10 MB body holds ~400k addresses.
 */
export const MAX_RECIPIENT_ENTRIES = 2 * MAX_RECIPIENTS;

/** One recipient or a list of them, always a list; null and scalars stay for IsDefined/IsArray to refuse. */
function toRecipients({ value }: { value: unknown }): unknown {
  if (Array.isArray(value)) return value.slice(0, MAX_RECIPIENT_ENTRIES + 1).map(toMailbox);
  if (typeof value === 'string' || isPlainObject(value)) return [toMailbox(value)];
  return value;
}

/**
 * At most `MAX_RECIPIENTS` distinct addresses (case-insensitive; the
 * addresses are lower-cased already) and `MAX_RECIPIENT_ENTRIES` entries.
 * Constraint `arrayMaxSize` maps to `too_big`.
 */
function MaxRecipients(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'arrayMaxSize',
    `$property may list at most ${MAX_RECIPIENTS} distinct recipients (${MAX_RECIPIENT_ENTRIES} entries)`,
    (value) => {
      if (!Array.isArray(value)) return true;
      if (value.length > MAX_RECIPIENT_ENTRIES) return false;
      const distinct = new Set(value.map((r: unknown) => (r instanceof MailboxDto ? r.email : r)));
      return distinct.size <= MAX_RECIPIENTS;
    },
    options,
  );
}

export class AttachmentDto {
  @ApiProperty({ maxLength: 255 })
  @IsString()
  @NotBlank()
  @MaxLength(255)
  @NoLineBreaks()
  filename: string;

  @ApiProperty({ description: 'File content, base64 (line breaks allowed, as in MIME)' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.replace(/[\r\n\t ]+/g, '') : value,
  )
  @IsString()
  @IsNotEmpty()
  @IsBase64()
  content: string;

  @ApiPropertyOptional({
    example: 'application/pdf',
    description: 'Guessed from the filename when omitted',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(255)
  @Matches(/^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/, {
    message: 'contentType must be a MIME type like text/plain',
  })
  contentType?: string;
}

export const MAX_ATTACHMENTS = 10;
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

/**
 * POST /v1/send. Field names are Plunk's, so its SDKs work unchanged; `reply`
 * (Plunk v1 SDKs) is accepted as an alias of `replyTo`.
 */
export class SendEmailDto {
  @ApiProperty({
    description: `An email, {email, name?}, or an array of those (1..${MAX_RECIPIENTS} distinct recipients; duplicates, case-insensitive, are sent once)`,
    oneOf: [
      { type: 'string', format: 'email' },
      { $ref: '#/components/schemas/MailboxDto' },
      {
        type: 'array',
        items: {
          oneOf: [{ type: 'string', format: 'email' }, { $ref: '#/components/schemas/MailboxDto' }],
        },
      },
    ],
  })
  @IsDefined()
  @Transform(toRecipients)
  @IsArray()
  @ArrayMinSize(1)
  @MaxRecipients()
  @ValidateNested({ each: true })
  to: MailboxDto[];

  @ApiPropertyOptional({
    format: 'uuid',
    description: 'A template id; its fields apply and request fields override them',
  })
  @OptionalNotNull()
  @IsUUID()
  template?: string;

  @ApiPropertyOptional({ description: 'Liquid; required without template' })
  @OptionalNotNull()
  @IsString()
  @NotBlank()
  @MaxLength(998)
  @NoLineBreaks()
  @IsLiquidTemplate()
  subject?: string;

  @ApiPropertyOptional({
    description: 'HTML (or Markdown with type=markdown) with Liquid; required without template',
  })
  @OptionalNotNull()
  @IsString()
  @NotBlank()
  @MaxLength(1_000_000)
  @IsLiquidTemplate()
  body?: string;

  @ContactDataField(
    'Render variables, also merged into each contact as in /v1/track. At most 64 KB',
  )
  data?: Record<string, unknown>;

  @ApiPropertyOptional({
    description:
      "Sender: an email or {email, name?}; defaults to the template's, then the project's defaultFrom",
    // type Object: without it Swagger adds the reflected MailboxDto as an allOf beside the oneOf.
    type: Object,
    oneOf: [{ type: 'string', format: 'email' }, { $ref: '#/components/schemas/MailboxDto' }],
  })
  @OptionalNotNull()
  @Transform(({ value }: { value: unknown }) => toMailbox(value))
  @IsObject({ message: 'from must be an email or {email, name?}' })
  @IsSenderAddress()
  @ValidateNested()
  @Type(() => MailboxDto)
  from?: MailboxDto;

  @DisplayNameField('Sender display name')
  name?: string;

  @ApiPropertyOptional({ format: 'email' })
  @OptionalNotNull()
  @Transform(toNormalizedEmail)
  @IsEmail()
  @MaxLength(320)
  replyTo?: string;

  @ApiPropertyOptional({ format: 'email', description: 'Alias of replyTo (Plunk v1 SDKs)' })
  @OptionalNotNull()
  @Transform(toNormalizedEmail)
  @IsEmail()
  @MaxLength(320)
  reply?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    description:
      'Extra headers; no CR/LF; From, To, Subject, Cc, Bcc, Reply-To, Message-ID, Date, Content-*, DKIM-Signature, List-Unsubscribe… are refused',
  })
  @OptionalNotNull()
  @Transform(rawJsonValue)
  @IsJsonObject()
  @MaxJsonSize(16 * 1024)
  headers?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [AttachmentDto], maxItems: MAX_ATTACHMENTS })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_ATTACHMENTS)
  @ValidateNested({ each: true })
  @Type(() => AttachmentDto)
  attachments?: AttachmentDto[];

  @ApiPropertyOptional({
    description: 'Subscription of the recipients; new contacts are not subscribed unless true',
  })
  @OptionalNotNull()
  @IsBoolean()
  subscribed?: boolean;

  // The default is stated in words: generators (openapi-typescript 7) make a property with `default` required in requests.
  @ApiPropertyOptional({
    enum: ['html', 'markdown'],
    description:
      'How body is written: html (the default) or markdown (rendered to HTML after Liquid)',
  })
  @OptionalNotNull()
  @IsIn(['html', 'markdown'])
  type?: 'html' | 'markdown';

  @ApiPropertyOptional({
    description:
      'Track opens (a 1x1 pixel) and clicks (links rewritten to signed redirects) of this mail. MARKETING templates are always tracked; ' +
      'otherwise true turns tracking on, and false or absent leaves it to the template',
  })
  @OptionalNotNull()
  @IsBoolean()
  track?: boolean;
}

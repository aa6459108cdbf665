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
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { IsLiquidTemplate, MaxJsonSize, NoLineBreaks } from '../../templates/template-validators';

const lowerTrim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim().toLowerCase() : value);

/** An address with an optional display name: `{email, name?}`. */
export class MailboxDto {
  @ApiProperty({ format: 'email' })
  @IsDefined()
  @Transform(lowerTrim)
  @IsEmail({ require_tld: true, allow_display_name: false })
  @MaxLength(320)
  email: string;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @NoLineBreaks()
  name?: string;
}

/** `"a@b.c"` and `{email, name?}` both become a MailboxDto; anything else is left for validation to refuse. */
function toMailbox(value: unknown): unknown {
  if (typeof value === 'string') return plainToInstance(MailboxDto, { email: value });
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return plainToInstance(MailboxDto, value);
  return value;
}

export class AttachmentDto {
  @ApiProperty({ maxLength: 255 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(255)
  @NoLineBreaks()
  filename: string;

  @ApiProperty({ description: 'File content, base64' })
  @IsString()
  @IsNotEmpty()
  @IsBase64()
  content: string;

  @ApiPropertyOptional({ example: 'application/pdf', description: 'Guessed from the filename when omitted' })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  @Matches(/^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/, { message: 'contentType must be a MIME type like text/plain' })
  contentType?: string;
}

export const MAX_RECIPIENTS = 50;
export const MAX_ATTACHMENTS = 10;
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

/**
 * POST /v1/send. Field names are Plunk's, so its SDKs work unchanged; `reply`
 * (Plunk v1 SDKs) is accepted as an alias of `replyTo`.
 */
export class SendEmailDto {
  @ApiProperty({
    description: `An email, {email, name?}, or an array of those (1..${MAX_RECIPIENTS} distinct recipients)`,
    oneOf: [
      { type: 'string', format: 'email' },
      { $ref: '#/components/schemas/MailboxDto' },
      { type: 'array', items: { oneOf: [{ type: 'string', format: 'email' }, { $ref: '#/components/schemas/MailboxDto' }] } },
    ],
  })
  @IsDefined()
  @Transform(({ value }: { value: unknown }) => (Array.isArray(value) ? value.map(toMailbox) : [toMailbox(value)]))
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_RECIPIENTS)
  @ValidateNested({ each: true })
  to: MailboxDto[];

  @ApiPropertyOptional({ format: 'uuid', description: 'A template id; its fields apply and request fields override them' })
  @IsOptional()
  @IsUUID()
  template?: string;

  @ApiPropertyOptional({ description: 'Liquid; required without template' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(998)
  @NoLineBreaks()
  @IsLiquidTemplate()
  subject?: string;

  @ApiPropertyOptional({ description: 'HTML (or Markdown with type=markdown) with Liquid; required without template' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(1_000_000)
  @IsLiquidTemplate()
  body?: string;

  @ApiPropertyOptional({ description: 'Render variables, also merged into each contact as in /v1/track' })
  @IsOptional()
  @IsObject()
  @MaxJsonSize(64 * 1024)
  data?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'Sender: an email or {email, name?}; defaults to the template sender' })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => toMailbox(value))
  @ValidateNested()
  @Type(() => MailboxDto)
  from?: MailboxDto;

  @ApiPropertyOptional({ description: 'Sender display name', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @NoLineBreaks()
  name?: string;

  @ApiPropertyOptional({ format: 'email' })
  @IsOptional()
  @Transform(lowerTrim)
  @IsEmail()
  @MaxLength(320)
  replyTo?: string;

  @ApiPropertyOptional({ format: 'email', description: 'Alias of replyTo (Plunk v1 SDKs)' })
  @IsOptional()
  @Transform(lowerTrim)
  @IsEmail()
  @MaxLength(320)
  reply?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'Extra headers; no CR/LF; From, To, Subject, Cc, Bcc, Reply-To, Message-ID, Date, Content-*, DKIM-Signature, List-Unsubscribe… are refused',
  })
  @IsOptional()
  @IsObject()
  @MaxJsonSize(16 * 1024)
  headers?: Record<string, unknown>;

  @ApiPropertyOptional({ type: [AttachmentDto], maxItems: MAX_ATTACHMENTS })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_ATTACHMENTS)
  @ValidateNested({ each: true })
  @Type(() => AttachmentDto)
  attachments?: AttachmentDto[];

  @ApiPropertyOptional({ description: 'Subscription of the recipients; new contacts are not subscribed unless true' })
  @IsOptional()
  @IsBoolean()
  subscribed?: boolean;

  @ApiPropertyOptional({ enum: ['html', 'markdown'], default: 'html' })
  @IsOptional()
  @IsIn(['html', 'markdown'])
  type?: 'html' | 'markdown';
}

export class SentEmailItem {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() to: string;
  @ApiProperty({ format: 'uuid', description: 'contact id' }) contact: string;
  @ApiProperty({ enum: ['QUEUED', 'SUPPRESSED'] }) status: string;
}

export class SendResponse {
  @ApiProperty({ format: 'uuid', description: 'contact id of the first recipient' }) contact: string;
  @ApiProperty({ format: 'uuid', description: 'email.queued event id of the first recipient' }) event: string;
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: [SentEmailItem] }) emails: SentEmailItem[];
}

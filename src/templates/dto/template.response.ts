import { ApiProperty } from '@nestjs/swagger';
import { TemplateType } from '../template.entity';

/** A stored template. */
export class TemplateResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ description: 'Liquid' }) subject: string;
  @ApiProperty({ description: 'HTML with Liquid' }) body: string;
  @ApiProperty({ enum: TemplateType, enumName: 'TemplateType' }) type: TemplateType;
  @ApiProperty({ type: String, nullable: true }) from: string | null;
  @ApiProperty({ type: String, nullable: true }) fromName: string | null;
  @ApiProperty({ type: String, nullable: true }) replyTo: string | null;
  @ApiProperty({
    description:
      'Open and click tracking for TRANSACTIONAL mail (MARKETING mail is always tracked)',
  })
  track: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

/** A rendered template: POST /templates/{id}/preview. */
export class TemplatePreviewResponse {
  @ApiProperty() subject: string;
  @ApiProperty() html: string;
  @ApiProperty() text: string;
}

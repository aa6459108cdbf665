import { ApiProperty } from '@nestjs/swagger';
import { SendingStatus } from '../../projects/project.entity';

/** GET /project/health: the project's sender reputation as the thresholds see it. */
export class ProjectHealthResponse {
  @ApiProperty({ example: 7 }) windowDays: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'Messages handed to a server in the window (accepted, or refused with a 5xx); the window starts at the last resume when that is later',
  })
  sent: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Hard bounces, late ones included' })
  bounced: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) complained: number;
  @ApiProperty({ minimum: 0, maximum: 1 }) bounceRate: number;
  @ApiProperty({ minimum: 0, maximum: 1 }) complaintRate: number;
  @ApiProperty({ enum: SendingStatus, enumName: 'SendingStatus' }) status: SendingStatus;
  @ApiProperty({ nullable: true, type: String, example: 'bounce rate 12.00% ≥ 10.00%' })
  reason: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) pausedAt: string | null;
}

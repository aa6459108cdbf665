import { Module } from '@nestjs/common';
import { AuthModule } from '../common/auth/auth.module';
import { SessionController } from './session.controller';
import { SessionService } from './session.service';

/** Dashboard sign-in and sign-out (POST/GET/DELETE /session); the guard resolves the cookie. */
@Module({
  imports: [AuthModule],
  controllers: [SessionController],
  providers: [SessionService],
})
export class SessionModule {}

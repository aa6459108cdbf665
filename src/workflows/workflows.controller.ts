import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiDeletedSuccess,
  ApiErrorResponses,
  ApiKeyProtected,
  ApiListSuccess,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { DeletedResponse } from '../common/openapi/error-envelope.response';
import { Page } from '../common/pagination/pagination';
import { IdParamDto } from '../common/validation/id.param';
import { CreateWorkflowDto } from './dto/create-workflow.dto';
import { ExecutionIdParamDto } from './dto/execution-id.param';
import { ExecutionResponse } from './dto/execution.response';
import { ListExecutionsQueryDto } from './dto/list-executions.query';
import { ListWorkflowsQueryDto } from './dto/list-workflows.query';
import { StartExecutionDto } from './dto/start-execution.dto';
import { UpdateWorkflowDto } from './dto/update-workflow.dto';
import { WorkflowResponse, WorkflowWithSecretResponse } from './dto/workflow.response';
import { WorkflowsService } from './workflows.service';

@ApiTags('workflows')
@ApiKeyProtected()
@Controller('workflows')
export class WorkflowsController {
  constructor(private readonly workflows: WorkflowsService) {}

  @Get()
  @ApiOp('workflows_list', 'List workflows, newest first (filters enabled, search)')
  @ApiListSuccess(WorkflowResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListWorkflowsQueryDto,
  ): Promise<Page<WorkflowResponse>> {
    return this.workflows.list(project.id, query);
  }

  @Post()
  @ApiOp(
    'workflows_create',
    'Create a workflow (disabled unless enabled: true); the answer holds its WEBHOOK signing secret, shown this once',
  )
  @ApiSuccess(201, WorkflowWithSecretResponse)
  @ApiErrorResponses([400, 413, 422])
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateWorkflowDto,
  ): Promise<WorkflowWithSecretResponse> {
    return this.workflows.create(project.id, dto);
  }

  @Get(':id')
  @ApiOp('workflows_get', 'Get a workflow with its executions by status')
  @ApiSuccess(200, WorkflowResponse)
  @ApiErrorResponses([400, 404])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<WorkflowResponse> {
    return this.workflows.get(project.id, params.id);
  }

  @Patch(':id')
  @ApiOp('workflows_update', 'Change a workflow; new steps apply to executions in flight')
  @ApiSuccess(200, WorkflowResponse)
  @ApiErrorResponses([400, 404, 413, 422])
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: UpdateWorkflowDto,
  ): Promise<WorkflowResponse> {
    return this.workflows.update(project.id, params.id, dto);
  }

  @Delete(':id')
  @ApiOp('workflows_delete', 'Delete a workflow and cancel its running executions')
  @ApiDeletedSuccess()
  @ApiErrorResponses([400, 404])
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<DeletedResponse> {
    return this.workflows.remove(project.id, params.id);
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @ApiOp(
    'workflows_rotateSecret',
    'Replace the WEBHOOK signing secret (shown once); it signs every call from now on',
  )
  @ApiSuccess(200, WorkflowWithSecretResponse)
  @ApiErrorResponses([400, 404])
  rotateSecret(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<WorkflowWithSecretResponse> {
    return this.workflows.rotateSecret(project.id, params.id);
  }

  @Get(':id/executions')
  @ApiOp('workflows_listExecutions', 'List executions, newest first (filters status, contactId)')
  @ApiListSuccess(ExecutionResponse)
  @ApiErrorResponses([400, 404])
  executions(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Query() query: ListExecutionsQueryDto,
  ): Promise<Page<ExecutionResponse>> {
    return this.workflows.listExecutions(project.id, params.id, query);
  }

  @Post(':id/executions')
  @HttpCode(202)
  @ApiOp('workflows_startExecution', 'Start an execution for a contact (contactId or email)')
  @ApiSuccess(202, ExecutionResponse)
  @ApiErrorResponses([400, 404, 409, 422], {
    409: 'CONFLICT: the workflow is disabled, or the contact may not enter again',
  })
  start(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: StartExecutionDto,
  ): Promise<ExecutionResponse> {
    return this.workflows.start(project.id, params.id, dto);
  }

  @Get(':id/executions/:executionId')
  @ApiOp('workflows_getExecution', 'Get one execution with its steps')
  @ApiSuccess(200, ExecutionResponse)
  @ApiErrorResponses([400, 404], {
    404: 'WORKFLOW_NOT_FOUND: no such workflow in this project, or no such execution of it',
  })
  execution(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: ExecutionIdParamDto,
  ): Promise<ExecutionResponse> {
    return this.workflows.execution(project.id, params.id, params.executionId);
  }

  @Post(':id/executions/:executionId/cancel')
  @HttpCode(200)
  @ApiOp('workflows_cancelExecution', 'Cancel a running or waiting execution')
  @ApiSuccess(200, ExecutionResponse)
  @ApiErrorResponses([400, 404, 409], {
    404: 'WORKFLOW_NOT_FOUND: no such workflow in this project, or no such execution of it',
    409: 'CONFLICT: the execution has already finished',
  })
  cancel(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: ExecutionIdParamDto,
  ): Promise<ExecutionResponse> {
    return this.workflows.cancel(project.id, params.id, params.executionId);
  }
}
